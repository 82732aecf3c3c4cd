// @ts-check
// Legend groups a page keeps (the head view's heads), part of the chart component (ui/chart.py).

// A legend group the viewer hid (a head of the head view: its legend entry and its line shapes) stays hidden when
// the server sends a new figure.
/** @param {ChartNode} node */
function hiddenGroups(node) {
  return new Set((node.data || []).filter((trace) => trace.legendgroup && trace.visible === "legendonly")
    .map((trace) => trace.legendgroup));
}

// A chart whose legend groups the page keeps (ui/chart.py's `hidden`: the head view's heads) sends them in its head
// (chart_messages.js hiddenOf). The viewer hides and shows them here (a legend click: Plotly's own, no round
// trip), and the chart tells the server after the next paint; the server's answer, the same groups, is not drawn.
const SETTLE_MS = 2000;  // within this long of a click here, a server's groups that are not the ones told are stale

/** @param {Iterable<string>} one @param {Iterable<string>} other */
function sameGroups(one, other) {
  return [...one].sort().join("\n") === [...other].sort().join("\n");
}

/** @param {ChartNode} node @param {string} group */
function toggleGroup(node, group) {  // a legend group's traces and shapes hidden or shown
  const hidden = hiddenGroups(node);
  if (!hidden.delete(group)) hidden.add(group);
  const drawn = restyleDrawn(node, group, hidden);
  // not drawn (a group Plotly itself left out, hidden by the server's first draw or a redraw of the shapes since):
  // one update of its traces' visibility and the shapes as one new list (a key per shape redraws them once per key)
  const done = drawn ? Promise.resolve() : window.Plotly.update(node, { visible: groupVisibility(node, hidden) },
    { shapes: (node.layout.shapes || []).map((shape) => withVisibility(shape, hidden)) }, groupTraces(node));
  return done.then(() => {
    node.al.hiddenDrawn = (node.al.hiddenDrawn || 0) + 1;  // bench/moves.py waits for it
    tellHidden(node);
  });
}

/** @param {ChartNode} node */
function groupTraces(node) {
  return node.data.flatMap((trace, index) => (trace.legendgroup ? [index] : []));
}

/** @param {string} group @param {Set<string>} hidden */
function visibilityOf(group, hidden) {  // Plotly's word for a group's traces and shapes
  return hidden.has(group) ? "legendonly" : true;
}

/** @param {ChartNode} node @param {Set<string>} hidden */
function groupVisibility(node, hidden) {
  return groupTraces(node).map((index) => visibilityOf(node.data[index].legendgroup, hidden));
}

/** @param {PlotlyShape} item @param {Set<string>} hidden */
function withVisibility(item, hidden) {
  return item.legendgroup ? { ...item, visible: visibilityOf(item.legendgroup, hidden) } : item;
}

// A group hidden or shown by styling what Plotly drew, its shapes' paths and its legend entries (dimmed to 0.5, as
// Plotly dims them), where a Plotly update would draw the whole plot again (twice the time at N = 64:
// docs/performance.md): the group's layer faded (group_layers.js: nothing rasterised again), or its paths hidden.
// The figure's data and layout say the same, so every later draw (a relayout of the shapes, a react, a resize, a
// saved SVG) draws it so. False, nothing changed: not drawn.
/** @param {ChartNode} node @param {string} group @param {Set<string>} hidden */
function restyleDrawn(node, group, hidden) {
  const shapes = node.layout.shapes || [];
  const indices = shapes.flatMap((shape, index) => (shape.legendgroup === group ? [index] : []));
  const found = indices.map((index) => node.querySelector(/** @type {"path"} */ (
    `.shapelayer path[data-index="${index}"], .al-group-layer path[data-index="${index}"]`)));
  const entries = /** @type {(HTMLElement & {__data__?: any})[]} */ ([...node.querySelectorAll(".legend .traces")])
    .filter((entry) => ((entry.__data__ || [])[0] || {}).trace?.legendgroup === group);  // d3's bound data: [{trace}]
  const paths = found.filter((path) => path !== null);
  if (paths.length < found.length || !entries.length) return false;
  const hide = hidden.has(group), layer = groupLayer(node, group);
  if (layer && paths.every((path) => path.parentNode === layer)) layer.style.opacity = hide ? "0" : "";
  else for (const path of paths) path.style.display = hide ? "none" : "";
  for (const entry of entries) entry.style.opacity = hide ? "0.5" : "1";
  for (const index of indices) shapes[index] = withVisibility(shapes[index], hidden);
  for (const trace of node.data) if (trace.legendgroup === group) trace.visible = visibilityOf(group, hidden);
  return true;
}

/** After a legend click: the groups now hidden, to the server. @param {ChartNode} node */
function tellHidden(node) {
  if (!node.al.setTrigger || hiddenOf(node.al.head) === null) return;
  const hidden = [...hiddenGroups(node)].sort();
  if (node.al.toldHidden && sameGroups(hidden, node.al.toldHidden)) return;
  node.al.toldHidden = hidden;
  node.al.toldHiddenAt = Date.now();
  const at = node.al.toldHiddenAt;
  afterPaint(() => node.al.setTrigger?.(AL.LEGEND, { hidden, at }));  // the latest one
}

// A new text whose figure is the one drawn and whose hidden groups are the ones shown (the server caught up with
// a click here), or are stale: nothing to draw.
/** @param {ChartNode} node @param {string} text @param {MessageHead} head its head */
function onlyHiddenCaughtUp(node, text, head) {
  const hidden = hiddenOf(head);
  if (hidden === null || !node.data || !node.al.head || !sameButHidden(text, head, node.al.text, node.al.head))
    return false;
  if (sameGroups(hidden, hiddenGroups(node))) return true;
  const told = node.al.toldHidden;
  return told !== null && told !== undefined && !sameGroups(hidden, told) && Date.now() - (node.al.toldHiddenAt || 0) < SETTLE_MS;
}

/** @template {PlotlyShape} T @param {T[]} items @param {Set<string>} hidden @returns {T[]} */
function hideGroups(items, hidden) {
  return hidden.size ? items.map((item) => (hidden.has(item.legendgroup) ? { ...item, visible: "legendonly" } : item))
    : items;
}
