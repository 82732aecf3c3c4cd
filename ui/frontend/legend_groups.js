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

function toggleGroup(node, group) {  // a legend group's traces and shapes hidden or shown, in one update
  const hidden = hiddenGroups(node);
  if (!hidden.delete(group)) hidden.add(group);
  const indices = [], visible = [];
  node.data.forEach((trace, index) => {
    if (trace.legendgroup) { indices.push(index); visible.push(hidden.has(trace.legendgroup) ? "legendonly" : true); }
  });
  // the shapes as one new list (one redraw of the shape layer; a key per shape redraws it once per key)
  const shapes = (node.layout.shapes || []).map((shape) => (shape.legendgroup
    ? { ...shape, visible: hidden.has(shape.legendgroup) ? "legendonly" : true } : shape));
  return window.Plotly.update(node, { visible }, { shapes }, indices).then(() => {
    node.alHiddenDrawn = (node.alHiddenDrawn || 0) + 1;  // bench/moves.py waits for it
    tellHidden(node);
  });
}

function tellHidden(node) {  // after a legend click: the groups now hidden, to the server
  if (!node.alSetTrigger || hiddenOf(node.alText) === null) return;
  const hidden = [...hiddenGroups(node)].sort();
  if (node.alToldHidden && sameGroups(hidden, node.alToldHidden)) return;
  node.alToldHidden = hidden;
  node.alToldHiddenAt = Date.now();
  afterPaint(() => node.alSetTrigger(__LEGEND__, { hidden, at: node.alToldHiddenAt }));
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
