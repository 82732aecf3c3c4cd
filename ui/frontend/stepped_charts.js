// @ts-check
// Charts of a step group, part of the chart component (ui/chart.py): which step to draw.

// A chart of a step group (ui/chart.py's stepped_chart) holds every step's figure and draws the group's step: the
// one its step control (ui/frontend/stepper.js) shows in this browser, else the one the server sent. The control
// keeps window.alSteps[group] and sends "al-step" when it moves, so its charts redraw here, with no round trip.
/** @param {Partial<SteppedChartMessage>} parsed a stepped chart's message @returns {number} */
function shownStep(parsed) {
  const step = parsed.group === undefined ? undefined : (window.alSteps || {})[parsed.group];
  return Math.max(0, Math.min(step === undefined ? parsed.index ?? 0 : step, (parsed.frames || []).length - 1));
}

/** A stepped chart's message but its step: the same for every step of the same figures.
 * @param {string} text @param {MessageHead} head its head */
function framesKey(text, head) {
  return JSON.stringify({ ...head, index: null }) + bulkOf(text);
}
