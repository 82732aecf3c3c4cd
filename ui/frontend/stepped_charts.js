// Charts of a step group, part of the chart component (ui/chart.py): which step to draw.

// A chart of a step group (ui/chart.py's stepped_chart) holds every step's figure and draws the group's step: the
// one its step control (ui/frontend/stepper.js) shows in this browser, else the one the server sent. The control
// keeps window.alSteps[group] and sends "al-step" when it moves, so its charts redraw here, with no round trip.
function shownStep(parsed) {
  const step = (window.alSteps || {})[parsed.group];
  return Math.max(0, Math.min(step === undefined ? parsed.index : step, parsed.frames.length - 1));
}

function framesKey(text) {  // a stepped payload's text but its step: the same for every step of the same figures
  return text.slice(text.indexOf('"group":'));
}

// A step's drawing, kept once Plotly has drawn it (a copy of its DOM, at this width and theme): a move back to a
// step shows its copy at once, over the chart, and Plotly draws the chart for real when the browser is next idle (the
// copy answers no hover meanwhile). A scrub back and forth then redraws nothing before it shows (docs/performance.md).
const KEPT_STEPS = 16;  // copies kept a chart (the oldest out first): a few MB at most

function pictureKey(node, traces) {
  return `${traces}|${node.alTheme.join()}|${node.clientWidth}`;
}

function keepPicture(node, traces) {  // after Plotly drew a stepped chart's step
  const live = node.querySelector(":scope > .plot-container");
  if (!node.alParsed.frames || !live || live.querySelector("canvas")) return;  // a canvas's pixels are not copied
  node.alPictures = node.alPictures || new Map();
  node.alPictures.delete(pictureKey(node, traces));
  node.alPictures.set(pictureKey(node, traces), live.cloneNode(true));
  if (node.alPictures.size > KEPT_STEPS) node.alPictures.delete(node.alPictures.keys().next().value);
}

function showPicture(node, traces) {  // true: the step's copy is over the chart now (the live chart hidden under it)
  const picture = node.data && node.alPictures && node.alPictures.get(pictureKey(node, traces));
  const live = node.querySelector(":scope > .plot-container");
  if (!picture || !live) return false;
  if (node.alPicture) node.alPicture.remove();
  // beside the chart's node, over it: inside it, Plotly would take the copy for its own container
  node.parentElement.style.position = "relative";
  Object.assign(picture.style, { position: "absolute", left: `${node.offsetLeft}px`, top: `${node.offsetTop}px`,
                                 width: `${node.offsetWidth}px`, height: `${node.offsetHeight}px`, pointerEvents: "none" });
  live.style.visibility = "hidden";  // laid out still: Plotly measures its text when it draws it
  node.parentElement.appendChild(picture);
  node.alPicture = picture;
  return true;
}

function dropPicture(node) {  // the live chart drawn: shown again, the copy over it taken away
  const live = node.querySelector(":scope > .plot-container");
  if (live) live.style.visibility = "";
  if (node.alPicture) node.alPicture.remove();
  node.alPicture = null;
}
