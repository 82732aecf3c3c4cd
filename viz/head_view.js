// @ts-check
// The head view's browser code, beside its figure builder (viz/head_view.py), part of the chart component
// (ui/chart.py, which loads every viz/*.js). Its figure draws its
// lines as path shapes, a segment "M0,query+offset L1,key+offset" a line (each head's offset puts heads' lines side
// by side), in their head's legend group, and layout.meta.lines gives each line shape's lines as numbers
// ({shape index: {query, key, offset}}). Hovering a token keeps only its lines,
// leaving it restores them: a relayout of the shapes (a head hidden in the legend stays hidden).

/** @param {ChartNode} node @param {string} side @param {number | null} row */
function hoverLines(node, side, row) {
  const end = side === "query" ? 0 : 1;
  const lineOf = node.al.lines;
  if (!lineOf) return;  // not a head view's figure
  const shapes = (node.layout.shapes || []).map((/** @type {PlotlyLayout} */ shape, /** @type {number} */ index) => {
    const drawn = lineOf.get(index);
    if (!drawn) return shape;
    const { lines, offset } = drawn;
    const kept = row === null ? lines : lines.filter((line) => line[end] === row);
    return { ...shape, path: kept.map(([query, key]) => `M0,${query + offset}L1,${key + offset}`).join("") };
  });
  window.Plotly.relayout(node, { shapes });
}

/** @param {{dtype: string, bdata: string}} array @returns {number[]} */
function positions({ dtype, bdata }) {  // a typed array as viz/head_view.py sends it: bytes ("u1") or int16, base64
  const bytes = Uint8Array.from(atob(bdata), (character) => character.charCodeAt(0));
  return Array.from(dtype === "u1" ? bytes : new Int16Array(bytes.buffer));
}

/** @param {ChartNode} node @param {Record<string, {query: any, key: any, offset?: number}> | undefined} lines */
function keepLines(node, lines) {  // {shape index: {lines: [[query, key] …], offset}} of the head view as drawn
  node.al.lines = lines ? new Map(Object.entries(lines).map(([index, ends]) => {
    const query = positions(ends.query), key = positions(ends.key);
    return [Number(index), { lines: query.map((row, line) => [row, key[line]]), offset: ends.offset || 0 }];
  })) : null;
}
