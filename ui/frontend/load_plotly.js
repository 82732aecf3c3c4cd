// @ts-check
// Loads the Plotly.js that ships in the installed plotly package, once per page (ui/chart.py).
const PLOTLY_GLOBAL = "__attentionLabPlotly";

/** @param {string} url @returns {Promise<any>} */
function loadPlotly(url) {  // one <script> per page, shared by every chart and the early loader
  if (window.Plotly) return Promise.resolve(window.Plotly);
  if (!window[PLOTLY_GLOBAL]) {
    window[PLOTLY_GLOBAL] = new Promise((resolve, reject) => {
      const script = document.createElement("script");
      script.src = url;
      script.onload = () => resolve(window.Plotly);
      script.onerror = () => { window[PLOTLY_GLOBAL] = undefined; reject(new Error("could not load " + url)); };
      document.head.appendChild(script);
    });
  }
  return window[PLOTLY_GLOBAL];
}
