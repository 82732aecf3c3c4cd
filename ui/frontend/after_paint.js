// @ts-check
// Run `then` once what a move drew here is on the screen: after the next frame, when the browser is next idle (the
// server's answer to a move, and Streamlit's redraw of the page, would otherwise hold that frame back). Safari has
// no requestIdleCallback: there, a short timer.
/** @param {() => unknown} then */
function afterPaint(then) {
  /** @type {(callback: () => unknown, options: IdleRequestOptions) => unknown} */
  const whenIdle = window.requestIdleCallback ? (callback, options) => window.requestIdleCallback(callback, options)
    : (callback) => setTimeout(callback, 50);
  requestAnimationFrame(() => setTimeout(() => whenIdle(then, { timeout: 500 }), 0));
}
