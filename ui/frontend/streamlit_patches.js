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
      if (timer !== null) clearTimeout(timer);
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

// A link in a page's text to another page of the app (a term's Glossary entry, "glossary#mask") opens that page in
// this tab and this session, as the sidebar's own link does: Streamlit's Markdown gives every link target=_blank,
// so each opened a new tab and a new session (74 s for a lesson's first page under load). The click is handed to
// the sidebar's link of that page, then the page scrolls to the link's anchor once it is drawn. A link with a query,
// to another site, or clicked with a modifier keeps the browser's own behaviour; with no sidebar link of that page
// (a phone's closed sidebar) it opens in this tab, reloading (a new session, but no new tab).
function sameSessionLinks() {  // once per page
  if (window.__attentionLabLinks) return;
  window.__attentionLabLinks = true;
  document.addEventListener("click", (event) => {
    const target = /** @type {Element | null} */ (event.target instanceof Element ? event.target : null);
    const link = /** @type {HTMLAnchorElement | null} */ (target && target.closest("a[href]"));
    if (!link || event.button !== 0 || event.ctrlKey || event.metaKey || event.shiftKey || event.altKey) return;
    if (link.closest('[data-testid="stSidebarNav"]') || !link.closest('[data-testid="stMarkdownContainer"]')) return;
    const url = new URL(link.href, location.href);
    if (url.origin !== location.origin || url.search) return;
    const page = pageOf(url.pathname);
    const nav = [...document.querySelectorAll('[data-testid="stSidebarNav"] a[href]')].find((candidate) =>
      pageOf(new URL(/** @type {HTMLAnchorElement} */ (candidate).href).pathname) === page);
    event.preventDefault();
    event.stopPropagation();
    if (!nav) { location.assign(url.href); return; }
    /** @type {HTMLElement} */ (nav).click();
    if (url.hash) scrollWhenDrawn(decodeURIComponent(url.hash.slice(1)), page, Date.now() + 60000);
  }, true);
}

/** @param {string} pathname */
function pageOf(pathname) { return pathname.split("/").filter(Boolean).pop() || ""; }

/**
 * Scrolls to the anchor's element once the new page drew it, and again while the page is still running and moves it
 * (a chart drawn above it); done once the run is over and the element has stayed put for half a second. Under load
 * a page can take longer than any fixed wait to draw: it gives up only after a minute or when another page is open.
 * @param {string} id @param {string} page @param {number} until @param {number} [steady] @param {number} [lastTop]
 */
function scrollWhenDrawn(id, page, until, steady = 0, lastTop = NaN) {
  const again = (/** @type {number} */ count, /** @type {number} */ top) => {
    if (Date.now() < until) window.setTimeout(() => scrollWhenDrawn(id, page, until, count, top), 100);
  };
  const found = pageOf(location.pathname) === page ? document.getElementById(id) : null;
  if (!found) { again(0, NaN); return; }
  const app = document.querySelector("[data-test-script-state]");
  const idle = !app || app.getAttribute("data-test-script-state") === "notRunning";
  const top = found.getBoundingClientRect().top;
  if (idle && Math.abs(top - lastTop) < 1) {
    if (steady < 5) again(steady + 1, top);
    return;
  }
  found.scrollIntoView({ block: "start" });
  again(0, found.getBoundingClientRect().top);
}
