// Copies of drawings, part of the chart component (ui/chart.py): a copy of the DOM Plotly drew for a figure, at the
// chart's width and theme. A move back to a figure drawn before (a step of a step group, or a control scrubbed back
// to a value: the server sends the same figure's text) puts its copy over the chart at once, and Plotly draws the
// chart for real when the browser is next idle; the copy answers no hover meanwhile (docs/performance.md). A chart
// whose legend groups the page keeps (the head view) keeps none: its legend is drawn in the browser.
const KEPT_STEPS = 16;  // copies a stepped chart keeps (the oldest out first): a few MB at most
const KEPT_FIGURES = 3;  // copies a chart keeps: the figure on the screen and the two before it

function drawingKey(node, traces) {  // what a drawing's copy is found by: a step's traces, a chart's whole text
  if (node.alParsed.frames) return traces;
  return hiddenOf(node.alText) === null ? node.alText : null;
}

function lookOf(node) {  // what a copy was drawn for besides its figure: the theme and the width
  return `${node.alTheme.join()}|${node.clientWidth}`;
}

function drawnAs(node) {  // what else Plotly drew the figure with: the look, a stepped chart's shapes and title
  return `${lookOf(node)}|${node.alShapes}|${node.alDrawnTitle}`;
}

function keepPicture(node, key) {  // after Plotly drew the figure `key` names
  const live = node.querySelector(":scope > .plot-container");
  if (key === null || !live || live.querySelector("canvas")) return;  // a canvas's pixels are not copied
  node.alPictures = node.alPictures || new Map();
  const copy = node.alPictures.get(key);
  node.alPictures.delete(key);
  if (copy && copy.drawnAs === drawnAs(node)) {  // the same drawing copied already: the newest now, not copied again
    node.alPictures.set(key, copy);
    return;
  }
  const picture = live.cloneNode(true);
  for (const label of picture.querySelectorAll(".hoverlayer > *")) label.remove();  // a hover label of the moment
  node.alPictures.set(key, { look: lookOf(node), drawnAs: drawnAs(node), picture });
  const limit = node.alParsed.frames ? KEPT_STEPS : KEPT_FIGURES;
  while (node.alPictures.size > limit) node.alPictures.delete(node.alPictures.keys().next().value);
}

function showPicture(node, key) {  // true: the figure's copy is over the chart now (the live chart hidden under it)
  const copy = key !== null && node.data && node.alPictures && node.alPictures.get(key);
  const live = node.querySelector(":scope > .plot-container");
  if (!copy || copy.look !== lookOf(node) || !live) return false;
  if (node.alPicture) node.alPicture.remove();
  const picture = copy.picture;
  // beside the chart's node, over it: inside it, Plotly would take the copy for its own container
  node.parentElement.style.position = "relative";
  Object.assign(picture.style, { position: "absolute", left: `${node.offsetLeft}px`, top: `${node.offsetTop}px`,
                                 width: `${node.offsetWidth}px`, height: `${node.offsetHeight}px`, pointerEvents: "none" });
  live.style.visibility = "hidden";  // laid out still: Plotly measures its text when it draws it
  node.parentElement.appendChild(picture);
  node.alPicture = picture;
  node.alPicturesShown = (node.alPicturesShown || 0) + 1;  // the browser tests watch it
  return true;
}

function dropPicture(node) {  // the live chart drawn: shown again, the copy over it taken away
  const live = node.querySelector(":scope > .plot-container");
  if (live) live.style.visibility = "";
  if (node.alPicture) node.alPicture.remove();
  node.alPicture = null;
}
