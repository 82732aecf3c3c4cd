// @ts-check
// Browser-side Streamlit patches, listed in ui/streamlit_patches.py's table.

// Fade stale elements only once a rerun has lasted 0.5 s (see stale_fade.css): a short rerun makes no layer.
/** Once per page: marks <html> while a rerun has lasted 0.5 s or more. @param {Element | null} app */
function fadeSlowRuns(app) {
  if (!app || window.__attentionLabFade) return;
  window.__attentionLabFade = true;
  const root = document.documentElement;
  /** @type {number | null} */
  let timer = null;
  const update = () => {
    if (app.getAttribute("data-test-script-state") === "notRunning") {
      clearTimeout(timer);
      timer = null;
      root.removeAttribute(AL.STALE_FADE_ATTRIBUTE);
    } else if (timer === null && !root.hasAttribute(AL.STALE_FADE_ATTRIBUTE)) {
      timer = window.setTimeout(() => { timer = null; root.setAttribute(AL.STALE_FADE_ATTRIBUTE, ""); }, 500);
    }
  };
  new MutationObserver(update).observe(app, { attributes: true, attributeFilter: ["data-test-script-state"] });
  update();
}

// Streamlit records each new address with history.pushState; a new address on the same page (a slider move)
// replaces the current entry instead, so Back leaves the page rather than stepping through every move.
function replaceQueryChanges() {  // once per page
  if (window.__attentionLabHistory) return;
  window.__attentionLabHistory = true;
  const push = history.pushState.bind(history);
  history.pushState = (state, unused, url) => {
    const samePage = url !== undefined && url !== null && new URL(url, location.href).pathname === location.pathname;
    return samePage ? history.replaceState(state, unused, url) : push(state, unused, url);
  };
}
