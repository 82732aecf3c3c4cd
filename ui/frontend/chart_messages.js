// @ts-check
// The chart component's messages (ui/chart_protocol.py), read by name. A message's first key is its kind; its last
// (AL.BULK: a chart's "figure", a stepped chart's "frames") holds megabytes of figures, and the keys before it, its
// head, are parsed alone: a message that changes nothing drawn costs no parse of its figures.

/** The keys before `text`'s last one, parsed. @param {string} text @returns {MessageHead} */
function headOf(text) {
  return JSON.parse(text.slice(0, bulkAt(text)) + "}");
}

/** Where `text`'s last key begins: the first of the bulk keys (a key's quotes are never escaped; a string's are).
 * @param {string} text */
function bulkAt(text) {
  const places = Object.values(AL.BULK).map((key) => text.indexOf(`, "${key}": `)).filter((at) => at >= 0);
  return Math.min(...places);
}

/** `text`'s last key and its value, as text. @param {string} text */
function bulkOf(text) {
  return text.slice(bulkAt(text));
}

/** The legend groups the server keeps hidden, or null for a chart without them. @param {MessageHead | null} head */
function hiddenOf(head) {
  return head && head.kind === "chart" && head.hidden ? head.hidden : null;
}

/** Two messages alike but for their hidden groups. @param {string} text @param {MessageHead} head
 * @param {string} other @param {MessageHead} otherHead */
function sameButHidden(text, head, other, otherHead) {
  return JSON.stringify({ ...head, hidden: null }) === JSON.stringify({ ...otherHead, hidden: null }) &&
    bulkOf(text) === bulkOf(other);
}
