// @ts-check
// A grid a student marks in the browser, beside its figure builder (viz/class_tally.py cell_picker, whose
// layout.meta.mark_cells gives the cells sent so far and the grid's size), part of the chart component (ui/chart.py).
// A click toggles one cell; a drag over cells (a row, a block: Plotly's box selection of the invisible point each
// cell carries, its customdata [query, key]) marks them, or clears them where every one was marked. Each change is
// drawn at once (a restyle of the grid's z and the send button's count), and nothing reaches the server until the
// figure's own button, "Send my cells", sends the whole grid once (a trigger value, AL.CELLS).

/** @param {ChartNode} node @param {PlotlyLayout | undefined} meta */
function keepMarks(node, meta) {  // the cells as the server drew them: where the browser's marking starts
  const cells = meta && meta.mark_cells;
  if (!cells) { node.al.marks = null; return; }
  const marks = Array.from({ length: cells.rows }, () => Array(cells.cols).fill(false));
  for (const [query, key] of cells.chosen) marks[query][key] = true;
  node.al.marks = marks;
}

/** @param {boolean[][]} marks */
function markedCount(marks) {
  return marks.reduce((sum, row) => sum + row.filter(Boolean).length, 0);
}

/** @param {ChartNode} node @param {number[][]} cells [query, key] pairs */
function toggleCells(node, cells) {  // all marked: cleared; else all marked
  const marks = node.al.marks;
  if (!marks || !cells.length) return;
  const value = !cells.every(([query, key]) => marks[query][key]);
  for (const [query, key] of cells) marks[query][key] = value;
  const z = marks.map((row) => row.map((marked) => (marked ? 1 : 0)));
  window.Plotly.restyle(node, { z: [z] }, [0]);
  window.Plotly.relayout(node, { "updatemenus[0].buttons[0].label": `Send my cells (${markedCount(marks)} marked)`,
                                 selections: [] });
}

/** @param {any} point a Plotly event's point @returns {number[] | null} */
function cellOf(point) {  // the [query, key] of a cell's point (a pair, or a typed array's row as an object)
  const cell = point && point.customdata;
  return cell && cell[0] !== undefined && cell[1] !== undefined ? [Number(cell[0]), Number(cell[1])] : null;
}

/** @param {ChartNode} node @param {any[]} points the points of a click or a drag */
function markPoints(node, points) {
  const cells = /** @type {number[][]} */ (points.map(cellOf).filter(Boolean));
  toggleCells(node, cells);
}

/** @param {ChartNode} node */
function sendMarks(node) {  // the whole grid, once: every marked [query, key]
  const marks = node.al.marks;
  if (!marks || !node.al.setTrigger) return;
  /** @type {number[][]} */
  const cells = [];
  marks.forEach((row, query) => row.forEach((marked, key) => { if (marked) cells.push([query, key]); }));
  node.al.setTrigger(AL.CELLS, { cells, at: Date.now() });
}
