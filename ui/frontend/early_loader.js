// @ts-check
// The early loader: fetches Plotly.js and the sidebar widgets' code while the server still imports
// TensorFlow, and installs the browser-side Streamlit patches. Its element takes no room on the page.
/** @param {ComponentArgs} component */
export default function ({ data, parentElement }) {
  replaceQueryChanges();
  sameSessionLinks();
  fadeSlowRuns(parentElement.closest('[data-testid="stApp"]'));
  const slot = /** @type {HTMLElement | null} */ (parentElement.closest('[data-testid="stElementContainer"]'));
  if (slot) slot.style.display = "none";
  /** @type {EarlyLoaderMessage} */
  const { plotly_url, widget_modules } = JSON.parse(new TextDecoder().decode(data));
  loadPlotly(plotly_url).catch(() => {});  // a chart that needs it reports a failure
  // Streamlit's own code for these widgets, fetched now rather than when the first sidebar arrives: the same
  // absolute URLs as Streamlit's lazy imports (this script has no URL of its own), so one copy of each module.
  for (const url of widget_modules) import(new URL(url, document.baseURI).href).catch(() => {});
}
