"""Plotly figures drawn by a small custom component that updates the chart in place.

Why not ``st.plotly_chart``: in Streamlit 1.67 a chart whose figure changes gets a new
element id, so the browser throws the old chart away, builds a new one
(``Plotly.newPlot``) and then draws it a second time from a copy of the same figure:
~130 ms of the browser's time per slider move on the Attention page. This component
keeps one Plotly node per chart key and calls ``Plotly.react`` with the new figure
(~60 ms there): one draw, and none when the figure is unchanged. A chart out of view
(beyond 200 px of the visible page, or in a closed expander) keeps its height but is
drawn only when it comes into view, so a move on a long page redraws what the viewer
sees. A ResizeObserver keeps the chart as wide as its column (a grid of panels no narrower
than its figure's ``layout.meta.min_width_px``: a narrower column scrolls it sideways), and
the chart takes the page's theme (light or dark) and follows a switch.

Plotly.js is the copy that ships inside the installed ``plotly`` Python package,
served by Streamlit's static file serving (``server.enableStaticServing``) from
``static/`` next to ``app.py``: nothing is fetched from the internet. The figure
travels as Plotly's own JSON (typed arrays base64-encoded) and is parsed with
``JSON.parse``: user text is never evaluated or inserted as HTML by this code.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
from pathlib import Path

import plotly
import plotly.io as pio
import streamlit as st

from viz.sizes import TICK_PX  # not viz.common: ~0.1 s of imports before the early loader is sent

ROOT = Path(__file__).resolve().parents[1]
STATIC_DIR = ROOT / "static"
PLOTLY_JS = "plotly.min.js"
CHART_CLASS = "al-chart"
COMPONENT_NAME = "attention_lab_plotly"

_LOAD_PLOTLY_JS = """
const PLOTLY_GLOBAL = "__attentionLabPlotly";

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
"""

_JS = _LOAD_PLOTLY_JS + """
const MIN_LABEL_PX = %(tick_px)s;  // room along an axis for one rotated tick label (viz.sizes.TICK_PX)

function chosenKeyLabels(layout) {  // {axis name: tickvals} of the category x axes whose labels the server chose
  const chosen = {};
  for (const [name, axis] of Object.entries(layout))
    if (name.startsWith("xaxis") && axis && axis.type === "category" && Array.isArray(axis.tickvals))
      chosen[name] = axis.tickvals;
  return chosen;
}

function categoryIndex(data, xId) {  // a category axis's order, as Plotly makes it: first seen, trace by trace
  const index = new Map();
  for (const trace of data)
    if ((trace.xaxis || "x") === xId && Array.isArray(trace.x))
      for (const x of trace.x) if (!index.has(x)) index.set(x, index.size);
  return index;
}

// The server chooses the labelled keys for a wide chart. A chart `widthPx` wide keeps every k-th of each
// panel's labels (its first one always) so that no two overlap: {axis name: the tickvals to draw}. Worked out
// from the figure before it is drawn (the axes have fixed margins), so a move draws once.
function fitKeyLabels(layout, data, widthPx, chosenByAxis) {
  const fitted = {};
  for (const [name, chosen] of Object.entries(chosenByAxis)) {
    const margin = layout.margin || {}, domain = layout[name].domain || [0, 1];
    const index = categoryIndex(data, "x" + name.slice(5));
    const at = chosen.map((label) => index.get(label));  // category index of each label
    const step = Math.min(...at.slice(1).map((place, i) => place - at[i]).filter((apart) => apart > 0));
    const cellPx = (widthPx - (margin.l ?? 80) - (margin.r ?? 80)) * (domain[1] - domain[0]) / index.size;
    const every = Number.isFinite(step) && cellPx > 0 ? Math.max(1, Math.ceil(MIN_LABEL_PX / (step * cellPx) - 1e-9)) : 1;
    let inPanel = 0;  // a label's place among its panel's labels (a larger step starts the next panel)
    fitted[name] = chosen.filter((label, i) => {
      inPanel = i > 0 && at[i] - at[i - 1] === step ? inPanel + 1 : 0;
      return inPanel %% every === 0;
    });
  }
  return fitted;
}

function refitKeyLabels(node) {  // after a resize
  const update = {};
  for (const [name, kept] of Object.entries(fitKeyLabels(node.layout, node.data, node.clientWidth, node.alKeyLabels || {})))
    if (kept.length !== node.layout[name].tickvals.length) update[name + ".tickvals"] = kept;
  if (Object.keys(update).length) return window.Plotly.relayout(node, update);
}

// The page's theme: Streamlit gives each component's wrapper the theme's colours as CSS custom properties
// (--st-background-color …; "" outside Streamlit), and they change when the viewer switches theme.
const THEME_PROPERTIES = ["--st-background-color", "--st-text-color", "--st-border-color"];

function themeOf(node) {  // [background, text, border]
  const style = getComputedStyle(node);
  return THEME_PROPERTIES.map((name) => style.getPropertyValue(name).trim());
}

function isDark(colour) {  // "#RRGGBB…": true when its relative luminance is below one half
  const match = /^#([0-9a-f]{2})([0-9a-f]{2})([0-9a-f]{2})/i.exec(colour);
  if (!match) return false;
  const [red, green, blue] = match.slice(1).map((hex) => parseInt(hex, 16) / 255);
  return 0.2126 * red + 0.7152 * green + 0.0722 * blue < 0.5;
}

// The layout in the page's colours: its background and text colour, and in a dark theme faint grid lines and
// axis lines that show on it (Plotly's own are drawn for a light background; its tool bar follows the background
// by itself). The data keep their colours (weights, masks, encodings): a colour means the same in every theme.
function themedLayout(layout, [background, text, border]) {
  if (!background) return layout;
  const themed = { ...layout, paper_bgcolor: background, font: { ...layout.font, color: text } };
  if (!layout.plot_bgcolor || layout.plot_bgcolor === "white") themed.plot_bgcolor = background;
  if (isDark(background)) {  // on each axis (xaxis, xaxis2 …, and the default pair): the axes set none of these
    const lines = { gridcolor: "rgba(255,255,255,0.12)", linecolor: border, zerolinecolor: border, tickcolor: border };
    const axes = new Set(["xaxis", "yaxis", ...Object.keys(layout).filter((name) => /^[xy]axis[0-9]*$/.test(name))]);
    for (const name of axes) themed[name] = { ...lines, ...layout[name] };
  }
  return themed;
}

// A chart is drawn when it is in view or within DRAW_MARGIN of it, and again when it comes back into view
// after its figure changed: a slider move redraws what the viewer can see, not every chart of a long page.
const DRAW_MARGIN = "200px";

function watchVisibility(node) {
  // scrollMargin widens Streamlit's scrolling main block as rootMargin widens the window (ignored where unsupported)
  const watcher = new IntersectionObserver((entries) => {
    node.alInView = entries[entries.length - 1].isIntersecting;
    if (node.alInView && node.alStale) draw(node);
  }, { rootMargin: DRAW_MARGIN, scrollMargin: DRAW_MARGIN });
  watcher.observe(node);
  return watcher;
}

// A grid of panels is not drawn narrower than its figure asks (viz.common.min_width_meta: the panels' titles stay
// apart): in a narrower column (a phone) the chart keeps that width and its wrapper scrolls sideways.
function keepMinWidth(node, widthPx) {
  const minWidth = widthPx ? widthPx + "px" : "";
  if (node.style.minWidth === minWidth) return;
  node.style.minWidth = minWidth;
  node.parentElement.style.overflowX = minWidth ? "auto" : "";
}

// node.alText's figure, in node.alTheme's colours, with the key labels that fit (one Plotly.react). Out of
// view (unless `evenOutOfView`), only the chart's height is set (the page keeps its layout) and the draw
// waits until it is in view.
function draw(node, evenOutOfView = false) {
  const { figure, config, plotly_url } = JSON.parse(node.alText);
  node.style.height = (figure.layout.height || 450) + "px";
  keepMinWidth(node, (figure.layout.meta || {}).min_width_px);
  node.alStale = !(node.alInView || evenOutOfView);
  if (node.alStale) return;
  const drawing = (node.alDrawing || 0) + 1;
  node.alDrawing = drawing;
  loadPlotly(plotly_url).then((Plotly) => {
    if (node.alDrawing !== drawing) return;
    node.alKeyLabels = chosenKeyLabels(figure.layout);
    const fitted = fitKeyLabels(figure.layout, figure.data, node.clientWidth, node.alKeyLabels);
    for (const [name, kept] of Object.entries(fitted)) figure.layout[name] = { ...figure.layout[name], tickvals: kept };
    Plotly.react(node, figure.data, themedLayout(figure.layout, node.alTheme), config);
  }).catch((error) => {
    node.textContent = "The chart could not be drawn: " + error.message;
  });
}

function setUp(parentElement) {
  const node = document.createElement("div");
  node.className = "%(chart_class)s";
  parentElement.appendChild(node);
  let width = 0;
  const resize = new ResizeObserver(() => {  // the sidebar opening, an expander opening, the window
    if (!window.Plotly || !node.data || node.clientWidth === width) return;
    width = node.clientWidth;
    window.Plotly.Plots.resize(node).then(() => refitKeyLabels(node));
  });
  resize.observe(node);
  const visibility = watchVisibility(node);  // its first report comes after this first run: then the first draw
  const drawForPrint = () => {  // printing (or saving as PDF) shows the whole page: draw the charts out of view too
    if (node.alStale) draw(node, true);
  };
  window.addEventListener("beforeprint", drawForPrint);
  node.alTheme = themeOf(node);  // then kept by a switch (below): not read again on every draw
  // A theme switch (the viewer's settings, or the system's light/dark) restyles the wrapper, not the figure.
  // Read once the switch has settled (it restyles more than one element).
  let pending = null;
  const retheme = new MutationObserver(() => {
    if (pending !== null) return;
    pending = setTimeout(() => {
      pending = null;
      const theme = themeOf(node);
      if (!node.alText || theme.join() === node.alTheme.join()) return;
      node.alTheme = theme;
      draw(node);
    }, 50);
  });
  for (let wrapper = parentElement, level = 0; wrapper && level < 2; wrapper = wrapper.parentElement, level++)
    retheme.observe(wrapper, { attributes: true, attributeFilter: ["class", "style"] });
  node.alCleanup = () => { resize.disconnect(); visibility.disconnect(); window.removeEventListener("beforeprint", drawForPrint); retheme.disconnect(); clearTimeout(pending); if (window.Plotly) window.Plotly.purge(node); };
  return node;
}

export default function (component) {
  const { data, parentElement } = component;
  const node = parentElement.querySelector(".%(chart_class)s") || setUp(parentElement);
  const text = new TextDecoder().decode(data);
  if (text !== node.alText) {  // an unchanged figure is not drawn again
    node.alText = text;
    draw(node);
  }
  return node.alCleanup;  // Streamlit keeps the last one returned and calls it on unmount
}
""" % {"chart_class": CHART_CLASS, "tick_px": TICK_PX}

_component = st.components.v2.component(COMPONENT_NAME, js=_JS, isolate_styles=False)

# Streamlit fades every element the running script has not sent again yet ("stale") to opacity 0.33,
# with `transition: opacity 1s ease-in 0.5s`. The browser gives each element with a pending opacity
# transition a compositing layer of its own, from the rerun's first frame on, even when the rerun ends
# within the 0.5 s delay and nothing ever fades: on every slider move ~35 layers (the Masks page) were
# made, painted, drawn and thrown away, and the page repainted without them. Here an element is faded
# only once a rerun has lasted 0.5 s, as Streamlit does, but the delay is a timer (``fadeSlowRuns``
# below) that marks the page, so a short rerun makes no layer at all.
STALE_FADE_ATTRIBUTE = "data-al-slow-run"
STALE_FADE_CSS = """
.stElementContainer[data-stale="true"] { opacity: 1; transition: none; }
html[%(attribute)s] .stElementContainer[data-stale="true"] { opacity: 0.33; transition: opacity 1s ease-in; }
""" % {"attribute": STALE_FADE_ATTRIBUTE}

_FADE_SLOW_RUNS_JS = """
function fadeSlowRuns(app) {  // once per page: marks <html> while a rerun has lasted 0.5 s or more
  if (!app || window.__attentionLabFade) return;
  window.__attentionLabFade = true;
  const root = document.documentElement;
  let timer = null;
  const update = () => {
    if (app.getAttribute("data-test-script-state") === "notRunning") {
      clearTimeout(timer);
      timer = null;
      root.removeAttribute("%(attribute)s");
    } else if (timer === null && !root.hasAttribute("%(attribute)s")) {
      timer = setTimeout(() => { timer = null; root.setAttribute("%(attribute)s", ""); }, 500);
    }
  };
  new MutationObserver(update).observe(app, { attributes: true, attributeFilter: ["data-test-script-state"] });
  update();
}
""" % {"attribute": STALE_FADE_ATTRIBUTE}

# The app mirrors its state in the address (ui.state.write_url), and Streamlit records each new address with
# history.pushState: every slider move was a history entry, and Back stepped through them one by one. A new
# address on the same page now replaces the current entry; going to another page still adds one.
_REPLACE_QUERY_CHANGES_JS = """
function replaceQueryChanges() {  // once per page
  if (window.__attentionLabHistory) return;
  window.__attentionLabHistory = true;
  const push = history.pushState.bind(history);
  history.pushState = (state, unused, url) => {
    const samePage = url !== undefined && url !== null && new URL(url, location.href).pathname === location.pathname;
    return samePage ? history.replaceState(state, unused, url) : push(state, unused, url);
  };
}
"""

# Fetches and compiles Plotly.js (4.6 MB, ~1.5 s in a fresh browser on 2 cores) and the sidebar widgets'
# code while the server is still importing TensorFlow, so the first page does not wait for them, fades
# stale elements only in slow reruns and keeps the address's changes out of the history (both above);
# its element takes no room on the page.
_EARLY_LOADER_JS = _LOAD_PLOTLY_JS + _FADE_SLOW_RUNS_JS + _REPLACE_QUERY_CHANGES_JS + """
export default function ({ data, parentElement }) {
  replaceQueryChanges();
  fadeSlowRuns(parentElement.closest('[data-testid="stApp"]'));
  const slot = parentElement.closest('[data-testid="stElementContainer"]');
  if (slot) slot.style.display = "none";
  const { plotly_url, widget_modules } = JSON.parse(new TextDecoder().decode(data));
  loadPlotly(plotly_url).catch(() => {});  // a chart that needs it reports a failure
  // Streamlit's own code for these widgets, fetched now rather than when the first sidebar arrives: the same
  // absolute URLs as Streamlit's lazy imports (this script has no URL of its own), so one copy of each module.
  for (const url of widget_modules) import(new URL(url, document.baseURI).href).catch(() => {});
}
"""
EARLY_LOADER_NAME = "attention_lab_plotly_early"
_early_loader = st.components.v2.component(EARLY_LOADER_NAME, js=_EARLY_LOADER_JS, css=STALE_FADE_CSS,
                                            isolate_styles=False)


# Streamlit's frontend loads each widget's code the first time one is drawn. The sidebar's widgets (and
# the pages' toggles and download buttons) are drawn only after the TensorFlow import on a cold start.
PRELOADED_WIDGETS = ("Selectbox", "Slider", "NumberInput", "TextInput", "TextArea", "Radio", "Checkbox",
                     "DownloadButton")
STREAMLIT_JS_DIR = Path(st.__file__).parent / "static" / "static" / "js"


@functools.cache
def widget_module_urls(js_dir: Path = STREAMLIT_JS_DIR) -> tuple[str, ...]:
    """URLs of the installed Streamlit's code chunks for :data:`PRELOADED_WIDGETS` (``Slider.<hash>.js``)."""
    prefix = served_path("/static/js/")
    files = sorted(os.listdir(js_dir))  # one directory read
    return tuple(prefix + name for widget in PRELOADED_WIDGETS for name in files
                 if name.startswith(f"{widget}.") and name.endswith(".js") and name.count(".") == 2)


def load_plotly_early() -> None:
    """Have the browser start loading Plotly.js and the widgets' code now (an invisible element, the same
    on every run)."""
    message = {"plotly_url": plotly_url(), "widget_modules": list(widget_module_urls())}
    _early_loader(key="plotly_early", data=json.dumps(message).encode())


@functools.cache
def publish_plotly_js(static_dir: Path = STATIC_DIR) -> Path:
    """Copy the installed plotly package's own plotly.min.js to ``static/`` when missing or different.

    Once per process (app.py calls it on every rerun). Written to a temporary name and
    renamed, so a browser never loads half a file.
    """
    source = Path(plotly.__file__).parent / "package_data" / PLOTLY_JS
    target = static_dir / PLOTLY_JS
    if not target.exists() or target.read_bytes() != source.read_bytes():
        static_dir.mkdir(exist_ok=True)
        partial = target.with_suffix(f".{os.getpid()}.part")
        shutil.copyfile(source, partial)
        os.replace(partial, target)
    return target


def served_path(path: str) -> str:
    """``path`` (from ``/``) as this server serves it, under ``server.baseUrlPath`` when one is set."""
    base = st.get_option("server.baseUrlPath").strip("/")
    return f"/{base}{path}" if base else path


def plotly_url() -> str:
    return served_path(f"/app/static/{PLOTLY_JS}")


CONFIG = {"displaylogo": False}  # resizing is the component's ResizeObserver


def chart_payload(fig) -> bytes:
    """What one chart sends: a JSON document {"config", "plotly_url", "figure"} as UTF-8 bytes.

    The figure is Plotly's own JSON (NumPy arrays as base64 typed arrays), spliced in
    as it is rather than parsed and dumped again.
    """
    head = json.dumps({"config": CONFIG, "plotly_url": plotly_url()})[:-1]
    return f'{head}, "figure": {pio.to_json(fig, validate=False)}}}'.encode()


def read_payload(payload: bytes) -> dict:
    """The inverse of :func:`chart_payload` (used by the tests and the benchmark)."""
    return json.loads(payload)


def chart(fig, key: str) -> None:
    """Draw ``fig`` (a ``go.Figure``) under ``key``; the same key updates the same chart in place."""
    _component(key=key, data=chart_payload(fig))
