// Run `then` once what a move drew here is on the screen: after the next frame, when the browser is next idle (the
// server's answer to a move, and Streamlit's redraw of the page, would otherwise hold that frame back).
function afterPaint(then) {
  requestAnimationFrame(() => setTimeout(() => requestIdleCallback(then, { timeout: 500 }), 0));
}
