// @ts-check
// Copies of drawings, part of the chart component (ui/chart.py): a copy of the DOM Plotly drew for a figure, at the
// chart's width and theme. A move back to a figure drawn before (a step of a step group, or a control scrubbed back
// to a value: the server sends the same figure's text) puts its copy over the chart at once, and Plotly draws the
// chart for real when the browser is next idle; the copy answers no hover meanwhile (docs/performance.md). A chart
// whose legend groups the page keeps (the head view) keeps none: its legend is drawn in the browser.
const KEPT_STEPS = 16;  // copies a stepped chart keeps (the oldest out first): a few MB at most
const KEPT_FIGURES = 3;  // copies a chart keeps: the figure on the screen and the two before it

/** What a drawing's copy is found by: a step's traces, a chart's whole text; null: none kept.
 * @param {ChartNode} node @param {string} traces @returns {string | null} */
function drawingKey(node, traces) {
  if (node.al.parsed.frames) return traces;
  return hiddenOf(node.al.head) === null ? node.al.text : null;
}

/** What a copy was drawn for besides its figure: the theme and the width. @param {ChartNode} node */
function lookOf(node) {
  return `${node.al.theme.join()}|${node.clientWidth}`;
}

/** What else Plotly drew the figure with: the look, a stepped chart's shapes and title. @param {ChartNode} node */
function drawnAs(node) {
  return `${lookOf(node)}|${node.al.shapes}|${node.al.drawnTitle}`;
}

/** After Plotly drew the figure `key` names. @param {ChartNode} node @param {string | null} key */
function keepPicture(node, key) {
  const live = node.querySelector(":scope > .plot-container");
  if (key === null || !live || live.querySelector("canvas")) return;  // a canvas's pixels are not copied
  const copy = node.al.pictures.get(key);
  node.al.pictures.delete(key);
  if (copy && copy.drawnAs === drawnAs(node)) {  // the same drawing copied already: the newest now, not copied again
    node.al.pictures.set(key, copy);
    return;
  }
  const picture = /** @type {HTMLElement} */ (live.cloneNode(true));
  for (const label of picture.querySelectorAll(".hoverlayer > *")) label.remove();  // a hover label of the moment
  node.al.pictures.set(key, { look: lookOf(node), drawnAs: drawnAs(node), picture });
  const limit = node.al.parsed.frames ? KEPT_STEPS : KEPT_FIGURES;
  for (const oldest of node.al.pictures.keys()) {  // the oldest first (a Map keeps its insertion order)
    if (node.al.pictures.size <= limit) break;
    node.al.pictures.delete(oldest);
  }
}

/** True: the figure's copy is over the chart now (the live chart hidden under it).
 * @param {ChartNode} node @param {string | null} key */
function showPicture(node, key) {
  const copy = key !== null && node.data && node.al.pictures.get(key);
  const live = /** @type {HTMLElement | null} */ (node.querySelector(":scope > .plot-container"));
  const holder = node.parentElement;
  if (!copy || copy.look !== lookOf(node) || !live || !holder) return false;
  if (node.al.picture) node.al.picture.remove();
  const picture = copy.picture;
  // beside the chart's node, over it: inside it, Plotly would take the copy for its own container
  holder.style.position = "relative";
  Object.assign(picture.style, { position: "absolute", left: `${node.offsetLeft}px`, top: `${node.offsetTop}px`,
                                 width: `${node.offsetWidth}px`, height: `${node.offsetHeight}px`, pointerEvents: "none" });
  live.style.visibility = "hidden";  // laid out still: Plotly measures its text when it draws it
  holder.appendChild(picture);
  node.al.picture = picture;
  node.al.picturesShown = (node.al.picturesShown || 0) + 1;  // the browser tests watch it
  return true;
}

/** The live chart drawn: shown again, the copy over it taken away. @param {ChartNode} node */
function dropPicture(node) {
  const live = /** @type {HTMLElement | null} */ (node.querySelector(":scope > .plot-container"));
  if (live) live.style.visibility = "";
  if (node.al.picture) node.al.picture.remove();
  node.al.picture = null;
}
