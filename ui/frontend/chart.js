// The chart component: one Plotly node per chart key, updated with Plotly.react (ui/chart.py). Its messages, both
// ways, are declared in ui/chart_protocol.py.
// Its placeholders (a name in double underscores) are filled in by ui/chart.py.
const MIN_LABEL_PX = AL.TICK_PX;  // room along an axis for one rotated tick label (viz.sizes.TICK_PX)

function chosenKeyLabels(layout) {  // {axis name: tickvals} of the category x axes whose labels the server chose
  const chosen = {};
  for (const [name, axis] of Object.entries(layout))
    if (name.startsWith("xaxis") && axis && axis.type === "category" && Array.isArray(axis.tickvals))
      chosen[name] = axis.tickvals;
  return chosen;
}

function categoryIndex(data, xId, axis) {  // a category axis's order, as Plotly makes it: named on the axis, or
  if (axis && Array.isArray(axis.categoryarray))  // first seen, trace by trace
    return new Map(axis.categoryarray.map((category, place) => [category, place]));
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
    const index = categoryIndex(data, "x" + name.slice(5), layout[name]);
    const at = chosen.map((label) => index.get(label));  // category index of each label
    const step = Math.min(...at.slice(1).map((place, i) => place - at[i]).filter((apart) => apart > 0));
    const cellPx = (widthPx - (margin.l ?? 80) - (margin.r ?? 80)) * (domain[1] - domain[0]) / index.size;
    const every = Number.isFinite(step) && cellPx > 0 ? Math.max(1, Math.ceil(MIN_LABEL_PX / (step * cellPx) - 1e-9)) : 1;
    let inPanel = 0;  // a label's place among its panel's labels (a larger step starts the next panel)
    fitted[name] = chosen.filter((label, i) => {
      inPanel = i > 0 && at[i] - at[i - 1] === step ? inPanel + 1 : 0;
      return inPanel % every === 0;
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

// A grid of panels is not drawn narrower than its figure asks (viz.panels.min_width_meta: the panels' titles stay
// apart): in a narrower column (a phone) it keeps that width, its wrapper scrolling sideways, until the page has
// laid it out for the column (reportWidth); a grid that cannot fit (the model view's heads) keeps scrolling.
function keepMinWidth(node, widthPx) {
  node.alMinWidth = widthPx || 0;
  const minWidth = widthPx ? widthPx + "px" : "";
  if (node.style.minWidth === minWidth) return;
  node.style.minWidth = minWidth;
  node.parentElement.style.overflowX = minWidth ? "auto" : "";
}

// A grid of panels too wide for a column narrower than NARROW_PX (a phone) tells the page the column's width, in
// steps of 10 px, and the page lays the grid out to fit it (fewer panels to a row): a state value, so the page
// runs again. Once told, it keeps telling while the column stays narrow; else it says 0, the default, so a
// chart that fits its column never makes the page run again.
const NARROW_PX = AL.NARROW_PX;

function reportWidth(node) {
  const width = node.parentElement.clientWidth;
  const narrow = width && width < NARROW_PX && (node.alReported || (node.alMinWidth || 0) > width);
  const reported = narrow ? Math.floor(width / 10) * 10 : 0;
  if (!node.alSetState || reported === (node.alReported ?? 0)) return;
  node.alReported = reported;
  node.alSetState(AL.COLUMN_PX, reported);  // ui/chart_protocol.py
}

// A chart's first figure, sent before the page knew the column's width its browser told (a message carries the
// width it was sent for: ui/chart.py), is not drawn: the page runs again for that width and sends the figure that
// fits (a grid that cannot fit, too: its text differs by the width), and that one is drawn first. On a phone a grid
// was otherwise drawn wider than the screen, then drawn again 0.3 s later. Without an answer, FIT_WAIT_MS draws it.
const FIT_WAIT_MS = 5000;

function waitsForFit(node, sentFor) {
  if (node.data || !node.alReported || sentFor === node.alReported || node.alFitWaitOver) return false;
  keepMinWidth(node, 0);  // an empty box the column's width meanwhile, not one to scroll sideways
  clearTimeout(node.alFitTimer);
  node.alFitTimer = setTimeout(() => { node.alFitWaitOver = true; if (!node.data) draw(node); }, FIT_WAIT_MS);
  return true;
}

// On a phone (a column narrower than NARROW_PX) Plotly's toolbar, at the chart's top right, covered the start of a
// long title: there a titled chart is TOOLBAR_PX taller, its plot and title lower by as much, the band above them
// the toolbar's. Wider, a title's line leaves the toolbar room as it is.
const TOOLBAR_PX = 30;

function roomForToolbar(layout, widthPx) {
  const title = layout.title, text = typeof title === "string" ? title : (title && title.text);
  if (!text || !widthPx || widthPx >= NARROW_PX) return;
  const height = layout.height || 450, margin = { t: 100, ...(layout.margin || {}) };
  const titled = typeof title === "string" ? { text: title } : { ...title };
  // where its first line's middle is: set by the figure, or Plotly's own place (that line's baseline at the top
  // margin's middle; its middle ~0.35 of the font's size above)
  const size = (titled.font && titled.font.size) || 17;
  const fromTop = titled.yref === "container" && typeof titled.y === "number" ? (1 - titled.y) * height
    : margin.t / 2 - 0.35 * size;
  layout.height = height + TOOLBAR_PX;
  layout.margin = { ...margin, t: margin.t + TOOLBAR_PX };
  layout.title = { yanchor: "middle", ...titled, yref: "container", y: 1 - (fromTop + TOOLBAR_PX) / layout.height };
}

// Saving a chart: the camera button saves a PNG at three times the screen's pixels (ui/chart.py's CONFIG: sharp on a
// slide), this one an SVG (vectors: any size). Made once for a config: Plotly.react compares the config it is given
// with the last one, a function by identity, and a config that differs costs a whole new plot and a react after it.
const exportConfigs = new Map();  // config's JSON -> the config with the SVG button

function exportConfig(config, Plotly) {
  const key = JSON.stringify(config);
  if (!exportConfigs.has(key)) exportConfigs.set(key, withSvgButton(config, Plotly));
  return exportConfigs.get(key);
}

function withSvgButton(config, Plotly) {
  const svg = {
    name: "Download plot as SVG (for slides and print)",
    icon: (Plotly.Icons && Plotly.Icons.disk) || Plotly.Icons.camera,
    click: (gd) => Plotly.downloadImage(gd, { format: "svg", filename: config.toImageButtonOptions.filename,
                                             width: gd._fullLayout.width, height: gd._fullLayout.height }),
  };
  return { ...config, modeBarButtonsToAdd: [svg] };
}

// A click on a cell or token tells the page which position it was (a trigger value): a heatmap cell gives its
// query and key, the column taken modulo meta.stride (Plotly numbers it by its place on the row's shared key axis,
// where each panel takes meta.stride categories with its gap), scaled up by meta.factor (a pooled view) and moved
// by meta.first (a cropped window's first query and key; viz/panels.py's click_meta); a head-view token gives its
// own side; a query of the query–key space (viz/query_key.py) its position and its line (customdata: token, line
// from 1, position).
function clickedPositions(point) {
  const meta = point.data.meta || {};
  if (meta.side) return { [meta.side]: meta.first + point.pointNumber };
  if (meta.scatter === "query") return { query: Number(point.customdata[2]), line: Number(point.customdata[1]) - 1 };
  if (!Array.isArray(point.pointNumber)) return null;
  const factor = meta.factor || 1, [row, column] = point.pointNumber, [query0, key0] = meta.first || [0, 0];
  return { query: query0 + row * factor, key: key0 + (meta.stride ? column % meta.stride : column) * factor };
}

function listen(node) {
  node.on("plotly_click", (event) => {
    const point = event.points && event.points[0];
    const clicked = point && clickedPositions(point);
    if (!clicked || !node.alClickable || !node.alSetTrigger) return;
    const at = Date.now(), tell = () => node.alSetTrigger(AL.CLICK, { ...clicked, at });
    // viz/panels.js draws the focus at once where the figure says how; the server hears of it once the outlines
    // are on the screen (its run's messages would hold that frame back)
    if (drawFocus(node, point)) afterPaint(tell); else tell();
  });
  node.on("plotly_hover", (event) => {
    const point = event.points && event.points[0], meta = point && point.data.meta;
    if (node.alLines && meta && meta.side) hoverLines(node, meta.side, point.pointNumber);
  });
  // A legend click on a chart whose groups the page keeps: toggled at once (Plotly's own would wait out its
  // double-click delay, 300 ms), then told to the server.
  node.on("plotly_legendclick", (event) => {
    if (hiddenOf(node.alText) === null || !event.data[event.curveNumber].legendgroup) return true;
    toggleGroup(node, event.data[event.curveNumber].legendgroup);
    return false;  // Plotly's own toggle not run
  });
  // Plotly's double click shows one group alone: a state the page would not keep (nor the link); not run there
  node.on("plotly_legenddoubleclick", () => hiddenOf(node.alText) === null);
  node.on("plotly_unhover", (event) => {
    const point = event.points && event.points[0], meta = point && point.data.meta;
    if (node.alLines && meta && meta.side) hoverLines(node, meta.side, null);
  });
}

// The traces of a chart's text as sent: from "figure" up to its "layout" key (a key's quotes are never escaped; a
// quote in a token is). A move that changes the layout alone (a focus outline, a title) keeps the traces drawn:
// Plotly.react given the same trace objects recomputes none of them, and a change of the shapes and the title
// alone (a focused token: the outlines, the head view's lines and what its title counts) is a relayout of those
// two: ~60 → ~5 ms for a 64 × 64 head grid here.
function tracesText(text) {
  const start = text.indexOf('"figure":');
  return text.slice(start, text.indexOf('"layout":', start));
}

// `layout` without the keys named (a dotted name: a key of a key), left out rather than set to null: a layout that
// gains its first focus outline would otherwise place "shapes" elsewhere in the text and compare as another layout.
function withoutKeys(layout, names) {
  const kept = { ...layout, meta: { ...(layout.meta || {}) } };
  for (const name of names) {
    const [first, second] = name.split(".");
    if (second) delete kept[first][second]; else delete kept[first];
  }
  return kept;
}

// What to draw: {figure, config, plotly_url, traces}; `traces` names the figure's traces (a stepped chart's
// figures and its step, or a single figure's trace text) so that a move that keeps them redraws only the layout.
function shownFigure(node) {
  const parsed = node.alParsed;
  if (!parsed.frames) return { ...JSON.parse(node.alText), traces: tracesText(node.alText) };
  node.alShownStep = shownStep(parsed);
  return { figure: structuredClone(parsed.frames[node.alShownStep]), config: parsed.config,
           plotly_url: parsed.plotly_url, column: parsed.column,
           traces: framesKey(node.alText) + "#" + node.alShownStep };
}

// node.alText's figure (a stepped chart's: its step's), in node.alTheme's colours, with the key labels that fit
// (one Plotly.react). Out of view (unless `evenOutOfView`), only the chart's height is set (the page keeps its
// layout) and the draw waits until it is in view.
function draw(node, evenOutOfView = false) {
  const { figure, config, plotly_url, traces, column } = shownFigure(node);
  roomForToolbar(figure.layout, node.parentElement.clientWidth);
  node.style.height = (figure.layout.height || 450) + "px";
  keepMinWidth(node, (figure.layout.meta || {}).min_width_px);
  reportWidth(node);
  node.alStale = !(node.alInView || evenOutOfView);
  if (node.alStale || waitsForFit(node, column)) return;
  const drawing = (node.alDrawing || 0) + 1;
  node.alDrawing = drawing;
  // a figure drawn before, with other traces than those drawn now (drawing_copies.js): its copy now, Plotly's drawing
  // when the browser is idle
  if (traces !== node.alDrawnTraces && showPicture(node, drawingKey(node, traces))) {
    node.alDrawnStep = node.alShownStep;
    afterPaint(() => plotted(node, drawing, figure, config, plotly_url, traces, true));
    return;
  }
  return plotted(node, drawing, figure, config, plotly_url, traces);
}

// Plotly's drawing of draw()'s figure (unless a later draw began), then its copy kept (drawing_copies.js) and any copy
// shown over the chart taken away. `kept`: the figure's copy is on the screen already (node.alDrawingKept says so
// while Plotly is called: bench/moves.py counts these draws apart).
function plotted(node, drawing, figure, config, plotly_url, traces, kept = false) {
  return loadPlotly(plotly_url).then((Plotly) => {
    if (node.alDrawing !== drawing) return;
    node.alDrawingKept = kept;
    try { return plottedNow(node, drawing, figure, config, traces, Plotly); } finally { node.alDrawingKept = false; }
  }).catch((error) => {
    dropPicture(node);
    node.textContent = "The chart could not be drawn: " + error.message;
  });
}

function plottedNow(node, drawing, figure, config, traces, Plotly) {
  node.alKeyLabels = chosenKeyLabels(figure.layout);
  const fitted = fitKeyLabels(figure.layout, figure.data, node.clientWidth, node.alKeyLabels);
  for (const [name, kept] of Object.entries(fitted)) figure.layout[name] = { ...figure.layout[name], tickvals: kept };
  node.alClickable = Boolean((figure.layout.meta || {}).click);
  node.classList.toggle("al-lines", Boolean((figure.layout.meta || {}).head_view));  // ui/frontend/chart.css
  const layout = themedLayout(figure.layout, node.alTheme);
  // what a relayout would not redraw (the head view's meta.lines name the shapes' lines: they go with the shapes)
  const lines = (layout.meta || {}).lines;
  const rest = JSON.stringify(withoutKeys(layout, ["shapes", "title", "meta.lines", "meta.focus"]));
  // the groups this browser shows hidden; the server's on a first draw, or when it changed them (a reset, a link)
  const serverHidden = hiddenOf(node.alText);
  const hidden = serverHidden !== null && (!node.data || node.alServerHidden !== JSON.stringify(serverHidden))
    ? new Set(serverHidden) : hiddenGroups(node);
  node.alServerHidden = JSON.stringify(serverHidden);
  if (serverHidden !== null) layerGroupsOf(node);  // group_layers.js: each group's lines a layer of their own
  layout.shapes = hideGroups(layout.shapes || [], hidden);
  const title = JSON.stringify(layout.title || ""), sameHidden = sameGroups(hidden, hiddenGroups(node));
  const shapes = shapesText(layout.shapes);
  if (node.data && traces === node.alDrawnTraces && rest === node.alDrawnLayout && sameHidden) {  // shapes, title
    node.layout.meta = layout.meta;  // (not drawn) a grid's focus as the server has it now
    if (shapes === node.alShapes && title === node.alDrawnTitle) {  // a focus this browser drew already
      node.alDrawnStep = node.alShownStep;
      shown(node, drawing, traces);
      return;
    }
    const update = { shapes: layout.shapes };
    if (title !== node.alDrawnTitle) update.title = layout.title || null;  // a title redraw: ~5 ms
    node.alDrawnTitle = title;
    node.alShapes = shapes;
    return Plotly.relayout(node, update).then(() => {
      keepLines(node, lines);
      node.alDrawnStep = node.alShownStep;
      shown(node, drawing, traces);
    });
  }
  const data = node.data && traces === node.alDrawnTraces && sameHidden ? node.data : hideGroups(figure.data, hidden);
  return Plotly.react(node, data, layout, exportConfig(config, Plotly))
    .then(() => {
      node.alDrawnTraces = traces;
      node.alDrawnLayout = rest;
      node.alDrawnTitle = title;
      node.alShapes = shapes;
      if (!node.alListening) { listen(node); node.alListening = true; }
      keepLines(node, lines);
      node.alDrawnStep = node.alShownStep;  // a stepped chart's step now on screen (bench/moves.py waits for it)
      shown(node, drawing, traces);
    });
}

// Plotly's drawing of `drawing` is on the chart: its copy is made when the browser is next idle, not in the frame
// that shows the move (a copy serves a later move; docs/performance.md), unless another draw or a focus drawn in the
// browser (viz/panels.js) changed the chart meanwhile.
function shown(node, drawing, traces) {
  if (node.alDrawing !== drawing) return;
  dropPicture(node);
  const key = drawingKey(node, traces), shapes = node.alShapes;
  afterPaint(() => {
    if (node.alDrawing === drawing && node.alShapes === shapes) keepPicture(node, key);
  });
}

function setUp(parentElement) {
  const node = document.createElement("div");
  node.className = AL.CHART_CLASS;
  parentElement.appendChild(node);
  let width = 0;
  const resize = new ResizeObserver(() => {  // the sidebar opening, an expander opening, the window
    reportWidth(node);
    if (!window.Plotly || !node.data || node.clientWidth === width) return;
    width = node.clientWidth;
    window.Plotly.Plots.resize(node).then(() => refitKeyLabels(node));
  });
  resize.observe(node);
  resize.observe(parentElement);  // the column: a chart kept wider than it (min-width) does not shrink with it
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
  const followStep = (event) => {  // the group's step control moved in this browser
    if (node.alParsed && node.alParsed.frames && event.detail.group === node.alParsed.group &&
        shownStep(node.alParsed) !== node.alShownStep) draw(node);
  };
  window.addEventListener("al-step", followStep);
  node.alCleanup = () => { clearTimeout(node.alFitTimer); resize.disconnect(); visibility.disconnect(); window.removeEventListener("beforeprint", drawForPrint); window.removeEventListener("al-step", followStep); retheme.disconnect(); clearTimeout(pending); node.alPictures = null; if (node.alLayersWatcher) node.alLayersWatcher.disconnect(); if (window.Plotly) window.Plotly.purge(node); };
  return node;
}

export default function (component) {
  const { data, parentElement, setTriggerValue, setStateValue } = component;
  const node = parentElement.querySelector("." + AL.CHART_CLASS) || setUp(parentElement);
  node.alSetTrigger = setTriggerValue;
  node.alSetState = setStateValue;
  const text = new TextDecoder().decode(data);
  if (text !== node.alText && onlyHiddenCaughtUp(node, text)) {
    node.alText = text;
    node.alServerHidden = JSON.stringify(hiddenOf(text));
  } else if (text !== node.alText) {  // an unchanged figure is not drawn again
    const stepped = text.startsWith('{"index":');
    const same = stepped && node.alText && node.alParsed.frames && framesKey(text) === framesKey(node.alText);
    node.alText = text;
    node.alParsed = same ? { ...node.alParsed, index: JSON.parse(text.slice(0, text.indexOf(",")) + "}").index }
      : stepped ? JSON.parse(text) : {};
    // a stepped chart whose figures came again (the server caught up with a step drawn here) is not drawn again
    if (!same || shownStep(node.alParsed) !== node.alShownStep) draw(node);
  }
  return node.alCleanup;  // Streamlit keeps the last one returned and calls it on unmount
}
