// Legend groups a page keeps (the head view's heads), part of the chart component (ui/chart.py).

// A legend group the viewer hid (a head of the head view: its legend entry and its line shapes) stays hidden when
// the server sends a new figure.
function hiddenGroups(node) {
  return new Set((node.data || []).filter((trace) => trace.legendgroup && trace.visible === "legendonly")
    .map((trace) => trace.legendgroup));
}

// A chart whose legend groups the page keeps (ui/chart.py's `hidden`: the head view's heads) sends them first,
// {"hidden": [...], "config": …}. The viewer hides and shows them here (a legend click: Plotly's own, no round
// trip), and the chart tells the server after the next paint; the server's answer, the same groups, is not drawn.
const SETTLE_MS = 2000;  // within this long of a click here, a server's groups that are not the ones told are stale

function hiddenOf(text) {  // the groups the server keeps hidden, or null for a chart without them
  return text.startsWith('{"hidden":') ? JSON.parse(text.slice(0, text.indexOf(', "config":')) + "}").hidden : null;
}

function withoutHidden(text) {
  return text.startsWith('{"hidden":') ? text.slice(text.indexOf('"config":')) : text;
}

function sameGroups(one, other) {
  return [...one].sort().join("\n") === [...other].sort().join("\n");
}

function toggleGroup(node, group) {  // a legend group's traces and shapes hidden or shown
  const hidden = hiddenGroups(node);
  if (!hidden.delete(group)) hidden.add(group);
  const drawn = restyleDrawn(node, group, hidden);
  // not drawn (a group Plotly itself left out, hidden by the server's first draw or a redraw of the shapes since):
  // one update of its traces' visibility and the shapes as one new list (a key per shape redraws them once per key)
  const done = drawn ? Promise.resolve() : window.Plotly.update(node, { visible: groupVisibility(node, hidden) },
    { shapes: (node.layout.shapes || []).map((shape) => withVisibility(shape, hidden)) }, groupTraces(node));
  return done.then(() => {
    node.alHiddenDrawn = (node.alHiddenDrawn || 0) + 1;  // bench/moves.py waits for it
    tellHidden(node);
  });
}

function groupTraces(node) {
  return node.data.flatMap((trace, index) => (trace.legendgroup ? [index] : []));
}

function visibilityOf(group, hidden) {  // Plotly's word for a group's traces and shapes
  return hidden.has(group) ? "legendonly" : true;
}

function groupVisibility(node, hidden) {
  return groupTraces(node).map((index) => visibilityOf(node.data[index].legendgroup, hidden));
}

function withVisibility(item, hidden) {
  return item.legendgroup ? { ...item, visible: visibilityOf(item.legendgroup, hidden) } : item;
}

// A group hidden or shown by styling what Plotly drew, its shapes' paths and its legend entries (dimmed to 0.5, as
// Plotly dims them), where a Plotly update would draw the whole plot again (twice the time at N = 64:
// docs/performance.md): the group's layer faded (group_layers.js: nothing rasterised again), or its paths hidden.
// The figure's data and layout say the same, so every later draw (a relayout of the shapes, a react, a resize, a
// saved SVG) draws it so. False, nothing changed: not drawn.
function restyleDrawn(node, group, hidden) {
  const shapes = node.layout.shapes || [];
  const indices = shapes.flatMap((shape, index) => (shape.legendgroup === group ? [index] : []));
  const paths = indices.map((index) => node.querySelector(
    `.shapelayer path[data-index="${index}"], .al-group-layer path[data-index="${index}"]`));
  const entries = [...node.querySelectorAll(".legend .traces")]  // d3's bound data: [{trace}]
    .filter((entry) => ((entry.__data__ || [])[0] || {}).trace?.legendgroup === group);
  if (paths.some((path) => !path) || !entries.length) return false;
  const hide = hidden.has(group), layer = groupLayer(node, group);
  if (layer && paths.every((path) => path.parentNode === layer)) layer.style.opacity = hide ? "0" : "";
  else for (const path of paths) path.style.display = hide ? "none" : "";
  for (const entry of entries) entry.style.opacity = hide ? 0.5 : 1;
  for (const index of indices) shapes[index] = withVisibility(shapes[index], hidden);
  for (const trace of node.data) if (trace.legendgroup === group) trace.visible = visibilityOf(group, hidden);
  return true;
}

function tellHidden(node) {  // after a legend click: the groups now hidden, to the server
  if (!node.alSetTrigger || hiddenOf(node.alText) === null) return;
  const hidden = [...hiddenGroups(node)].sort();
  if (node.alToldHidden && sameGroups(hidden, node.alToldHidden)) return;
  node.alToldHidden = hidden;
  node.alToldHiddenAt = Date.now();
  afterPaint(() => node.alSetTrigger(AL.LEGEND, { hidden, at: node.alToldHiddenAt }));
}

// A new text whose figure is the one drawn and whose hidden groups are the ones shown (the server caught up with
// a click here), or are stale: nothing to draw.
function onlyHiddenCaughtUp(node, text) {
  const hidden = hiddenOf(text);
  if (hidden === null || !node.data || !node.alText || withoutHidden(text) !== withoutHidden(node.alText)) return false;
  if (sameGroups(hidden, hiddenGroups(node))) return true;
  const told = node.alToldHidden;
  return Boolean(told) && !sameGroups(hidden, told) && Date.now() - (node.alToldHiddenAt || 0) < SETTLE_MS;
}

function hideGroups(items, hidden) {
  return hidden.size ? items.map((item) => (hidden.has(item.legendgroup) ? { ...item, visible: "legendonly" } : item))
    : items;
}
