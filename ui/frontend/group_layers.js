// @ts-check
// Each legend group's line shapes in a layer of their own (the head view's heads), part of the chart component
// (ui/chart.py). Chromium rasterises an SVG as one picture, so with every head's lines in Plotly's SVG, hiding one
// head rasterised every line that stays (100-300 ms at N = 64 on 2 cores: docs/performance.md). As Plotly draws a
// group's path shapes, they move into an SVG of their own laid over the plot (`will-change: opacity`: a layer of the
// compositor), and legend_groups.js hides or shows a group by that layer's opacity: no line is rasterised again.
const MAX_GROUP_LAYERS = 16;  // a layer is the plot's size in memory: a chart with more groups keeps Plotly's SVG
const LAYER_CLASS = "al-group-layer";

/** @param {ChartNode} node @param {SVGPathElement} path @returns {string | undefined} */
function groupOfPath(node, path) {  // the legend group of the shape a path draws, or undefined
  const shape = ((node.layout || {}).shapes || [])[Number(path.dataset.index)];
  return shape && shape.legendgroup;
}

// Watches the chart's DOM (once): whenever Plotly draws shapes (a react, a relayout of the lines, a resize), the
// groups' new paths go to their layers before the browser paints.
/** @param {ChartNode} node */
function layerGroupsOf(node) {
  if (node.al.groupLayers) return;
  node.al.groupLayers = new Map();  // group -> its <svg>
  node.al.layersWatcher = new MutationObserver((records) => {
    if (records.some(drewShapes)) moveToLayers(node);
  });
  node.al.layersWatcher.observe(node, { childList: true, subtree: true });
  moveToLayers(node);
}

/** @param {MutationRecord} record */
function drewShapes(record) {  // a record of Plotly adding or removing shape paths (or a subplot holding them)
  const target = /** @type {Element} */ (record.target);
  if (target.closest && target.closest(".shapelayer")) return true;
  return [...record.addedNodes].some((added) => added instanceof Element && added.querySelector(".shapelayer"));
}

/** @param {ChartNode} node */
function moveToLayers(node) {
  const main = node.querySelector(".main-svg"), layers = node.al.groupLayers;
  if (!layers) return;  // not watched (watchGroupLayers makes the map)
  const groups = new Set(((node.layout || {}).shapes || []).map((shape) => shape.legendgroup).filter(Boolean));
  if (!main || !groups.size || groups.size > MAX_GROUP_LAYERS) {  // back in Plotly's SVG at its next draw
    for (const layer of layers.values()) layer.remove();
    layers.clear();
    return;
  }
  for (const path of node.querySelectorAll(/** @type {"path"} */ (".shapelayer path[data-index]"))) {
    const group = groupOfPath(node, path);
    if (!group) continue;
    const layer = layerOf(layers, node, group, main);
    const old = layer.querySelector(`path[data-index="${path.dataset.index}"]`);
    if (old) old.remove();
    layer.appendChild(path);
    layer.style.opacity = "";  // Plotly draws a group it shows: a layer faded by a toggle here shows again
  }
  const drawn = (node._fullLayout || {}).shapes || [];
  for (const [group, layer] of layers) {
    for (const path of /** @type {SVGPathElement[]} */ ([...layer.children])) {  // a path of a shape Plotly no longer draws (hidden, or gone)
      const shape = drawn[Number(path.dataset.index)];
      if (!shape || shape.visible !== true || shape.legendgroup !== group) path.remove();
    }
    if (!groups.has(group)) { layer.remove(); layers.delete(group); }
  }
}

/**
 * @param {Map<string, SVGSVGElement>} layers node.al.groupLayers @param {ChartNode} node @param {string} group
 * @param {Element} main @returns {SVGSVGElement}
 */
function layerOf(layers, node, group, main) {  // the group's <svg> over the plot, the size of Plotly's, above its drawing
  let layer = layers.get(group);
  if (!layer || layer.parentNode !== main.parentNode) {
    if (layer) layer.remove();
    layer = document.createElementNS("http://www.w3.org/2000/svg", "svg");
    layer.classList.add(LAYER_CLASS);
    layer.dataset.group = group;
    layers.set(group, layer);
  }
  for (const size of ["width", "height"]) {
    const wanted = main.getAttribute(size);
    if (wanted !== null && layer.getAttribute(size) !== wanted) layer.setAttribute(size, wanted);
  }
  if (!layer.parentNode) {  // over Plotly's drawing, in Plotly's order of the groups, under the legend
    const shapes = node.layout.shapes || [];
    const first = (/** @type {string | undefined} */ name) =>
      shapes.findIndex((/** @type {PlotlyLayout} */ shape) => shape.legendgroup === name);
    let before = main;
    for (let next = /** @type {SVGSVGElement | null} */ (before.nextElementSibling);
      next && next.classList.contains(LAYER_CLASS) && first(next.dataset.group) < first(group);
      next = /** @type {SVGSVGElement | null} */ (before.nextElementSibling)) before = next;
    before.after(layer);
  }
  return layer;
}

/** @param {ChartNode} node @param {string} group */
function groupLayer(node, group) {  // a group's layer, when its lines are in one
  return node.al.groupLayers ? node.al.groupLayers.get(group) : undefined;
}
