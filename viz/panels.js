// @ts-check
// A grid of panels' focus drawn in the browser, beside its figure builder (viz/panels.py, whose focus_meta gives
// layout.meta.focus: the side a click focuses, the index focused now and that side's outlines of index 0 in every
// panel), part of the chart component (ui/chart.py). A click on a cell outlines its query row (or, with Attended
// by, its key column) in every panel at once, or takes the focus away when it was there; the chart then tells the
// server, whose run sends the same outlines: chart.js's draw finds them on screen and draws nothing.

/** @param {{side: string, outlines: PlotlyLayout[]}} focus @param {number} index */
function focusOutlines(focus, index) {  // the outlines of `index`: those of 0, moved along the focused side
  const [low, high] = focus.side === "query" ? ["y0", "y1"] : ["x0", "x1"];
  return focus.outlines.map((shape) => ({ ...shape, [low]: shape[low] + index, [high]: shape[high] + index }));
}

// Shapes as text whatever the order of their keys: what is on screen against what the server sends.
/** @param {PlotlyLayout[] | undefined} shapes */
function shapesText(shapes) {
  return JSON.stringify(shapes || [], (key, value) => value && typeof value === "object" && !Array.isArray(value)
    ? Object.fromEntries(Object.entries(value).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) : value);
}

// A clicked heatmap cell of a chart whose figure says how to draw its focus: drawn (true), or not such a chart.
/** @param {ChartNode} node @param {any} point a Plotly event's point */
function drawFocus(node, point) {
  const focus = (node.layout.meta || {}).focus;
  if (!focus || !Array.isArray(point.pointNumber)) return false;
  const meta = point.data.meta || {}, [row, column] = point.pointNumber;
  const index = focus.side === "query" ? row : (meta.stride ? column % meta.stride : column);
  focus.at = focus.at === index ? null : index;  // the same cell again: no focus, as the server decides
  const shapes = focus.at === null ? [] : focusOutlines(focus, index);
  node.al.shapes = shapesText(shapes);
  window.Plotly.relayout(node, { shapes });
  return true;
}
