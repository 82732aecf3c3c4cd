// @ts-check
// The chart component: one Plotly node per chart key, updated with Plotly.react (ui/chart.py). Its messages, both
// ways, are declared in ui/chart_protocol.py (their types: server.d.ts); a chart's state is one object, node.al
// (newChartState; its type, ChartState: browser.d.ts).
const MIN_LABEL_PX = AL.TICK_PX;  // room along an axis for one rotated tick label (viz.sizes.TICK_PX)

/** {axis name: tickvals} of the category x axes whose labels the server chose. @param {PlotlyLayout} layout */
function chosenKeyLabels(layout) {
  /** @type {Record<string, unknown[]>} */
  const chosen = {};
  for (const [name, axis] of Object.entries(layout))
    if (name.startsWith("xaxis") && axis && axis.type === "category" && Array.isArray(axis.tickvals))
      chosen[name] = axis.tickvals;
  return chosen;
}

/** A category axis's order, as Plotly makes it: named on the axis, or first seen, trace by trace.
 * @param {PlotlyTrace[]} data @param {string} xId @param {PlotlyLayout | undefined} axis @returns {Map<unknown, number>} */
function categoryIndex(data, xId, axis) {
  if (axis && Array.isArray(axis.categoryarray))
    return new Map(axis.categoryarray.map((/** @type {unknown} */ category, /** @type {number} */ place) => [category, place]));
  const index = new Map();
  for (const trace of data)
    if ((trace.xaxis || "x") === xId && Array.isArray(trace.x))
      for (const x of trace.x) if (!index.has(x)) index.set(x, index.size);
  return index;
}

// The server chooses the labelled keys for a wide chart. A chart `widthPx` wide keeps every k-th of each
// panel's labels (its first one always) so that no two overlap: {axis name: the tickvals to draw}. Worked out
// from the figure before it is drawn (the axes have fixed margins), so a move draws once.
/** @param {PlotlyLayout} layout @param {PlotlyTrace[]} data @param {number} widthPx
 * @param {Record<string, unknown[]>} chosenByAxis @returns {Record<string, unknown[]>} */
function fitKeyLabels(layout, data, widthPx, chosenByAxis) {
  /** @type {Record<string, unknown[]>} */
  const fitted = {};
  for (const [name, chosen] of Object.entries(chosenByAxis)) {
    const margin = layout.margin || {}, domain = layout[name].domain || [0, 1];
    const index = categoryIndex(data, "x" + name.slice(5), layout[name]);
    const at = chosen.map((label) => index.get(label) ?? NaN);  // category index of each label
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

/** After a resize. @param {ChartNode} node */
function refitKeyLabels(node) {
  /** @type {Record<string, unknown[]>} */
  const update = {};
  for (const [name, kept] of Object.entries(fitKeyLabels(node.layout, node.data, node.clientWidth, node.al.keyLabels || {})))
    if (kept.length !== node.layout[name].tickvals.length) update[name + ".tickvals"] = kept;
  if (Object.keys(update).length) return window.Plotly.relayout(node, update);
}

// The page's theme: Streamlit gives each component's wrapper the theme's colours as CSS custom properties
// (--st-background-color …; "" outside Streamlit), and they change when the viewer switches theme.
const THEME_PROPERTIES = ["--st-background-color", "--st-text-color", "--st-border-color"];

/** [background, text, border]. @param {Element} node */
function themeOf(node) {
  const style = getComputedStyle(node);
  return THEME_PROPERTIES.map((name) => style.getPropertyValue(name).trim());
}

/** "#RRGGBB…": true when its relative luminance is below one half. @param {string} colour */
function isDark(colour) {
  const match = /^#([0-9a-f]{2})([0-9a-f]{2})([0-9a-f]{2})/i.exec(colour);
  if (!match) return false;
  const [red, green, blue] = match.slice(1).map((hex) => parseInt(hex, 16) / 255);
  return 0.2126 * red + 0.7152 * green + 0.0722 * blue < 0.5;
}

// The layout in the page's colours: its background and text colour, and in a dark theme faint grid lines and
// axis lines that show on it (Plotly's own are drawn for a light background; its tool bar follows the background
// by itself). The data keep their colours (weights, masks, encodings): a colour means the same in every theme.
/** @param {PlotlyLayout} layout @param {string[]} theme [background, text, border] @returns {PlotlyLayout} */
function themedLayout(layout, [background, text, border]) {
  if (!background) return layout;
  /** @type {PlotlyLayout} */
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

/** @param {ChartNode} node */
function watchVisibility(node) {
  // scrollMargin widens Streamlit's scrolling main block as rootMargin widens the window (ignored where unsupported)
  const watcher = new IntersectionObserver((entries) => {
    node.al.inView = entries[entries.length - 1].isIntersecting;
    if (node.al.inView && node.al.stale) draw(node);
  }, /** @type {IntersectionObserverInit} */ ({ rootMargin: DRAW_MARGIN, scrollMargin: DRAW_MARGIN }));
  watcher.observe(node);
  return watcher;
}

// A grid of panels is not drawn narrower than its figure asks (viz.panels.min_width_meta: the panels' titles stay
// apart): in a narrower column (a phone) it keeps that width, its wrapper scrolling sideways, until the page has
// laid it out for the column (reportWidth); a grid that cannot fit (the model view's heads) keeps scrolling.
/** @param {ChartNode} node @param {number | undefined} widthPx */
function keepMinWidth(node, widthPx) {
  node.al.minWidth = widthPx || 0;
  const minWidth = widthPx ? widthPx + "px" : "";
  if (node.style.minWidth === minWidth) return;
  node.style.minWidth = minWidth;
  if (node.parentElement) node.parentElement.style.overflowX = minWidth ? "auto" : "";
}

// A grid of panels too wide for a column narrower than NARROW_PX (a phone) tells the page the column's width, in
// steps of 10 px, and the page lays the grid out to fit it (fewer panels to a row): a state value, so the page
// runs again. Once told, it keeps telling while the column stays narrow; else it says 0, the default, so a
// chart that fits its column never makes the page run again.
const NARROW_PX = AL.NARROW_PX;

/** @param {ChartNode} node */
function reportWidth(node) {
  const width = node.parentElement ? node.parentElement.clientWidth : 0;
  const narrow = width && width < NARROW_PX && (node.al.reported || (node.al.minWidth || 0) > width);
  const reported = narrow ? Math.floor(width / 10) * 10 : 0;
  if (!node.al.setState || reported === (node.al.reported ?? 0)) return;
  node.al.reported = reported;
  node.al.setState(AL.COLUMN_PX, reported);  // ui/chart_protocol.py
}

// A chart's first figure, sent before the page knew the column's width its browser told (a message carries the
// width it was sent for: ui/chart.py), is not drawn: the page runs again for that width and sends the figure that
// fits (a grid that cannot fit, too: its text differs by the width), and that one is drawn first. On a phone a grid
// was otherwise drawn wider than the screen, then drawn again 0.3 s later. Without an answer, FIT_WAIT_MS draws it.
const FIT_WAIT_MS = 5000;

/** @param {ChartNode} node @param {number} sentFor the column's width its figure was laid out for */
function waitsForFit(node, sentFor) {
  if (node.data || !node.al.reported || sentFor === node.al.reported || node.al.fitWaitOver) return false;
  keepMinWidth(node, 0);  // an empty box the column's width meanwhile, not one to scroll sideways
  clearTimeout(node.al.fitTimer);
  node.al.fitTimer = window.setTimeout(() => { node.al.fitWaitOver = true; if (!node.data) draw(node); }, FIT_WAIT_MS);
  return true;
}

// On a phone (a column narrower than NARROW_PX) Plotly's toolbar, at the chart's top right, covered the start of a
// long title: there a titled chart is TOOLBAR_PX taller, its plot and title lower by as much, the band above them
// the toolbar's. Wider, a title's line leaves the toolbar room as it is.
const TOOLBAR_PX = 30;

/** @param {PlotlyLayout} layout @param {number} widthPx */
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

/** @param {Record<string, any>} config @param {any} Plotly */
function exportConfig(config, Plotly) {
  const key = JSON.stringify(config);
  if (!exportConfigs.has(key)) exportConfigs.set(key, withSvgButton(config, Plotly));
  return exportConfigs.get(key);
}

/** @param {Record<string, any>} config @param {any} Plotly */
function withSvgButton(config, Plotly) {
  const svg = {
    name: "Download plot as SVG (for slides and print)",
    icon: (Plotly.Icons && Plotly.Icons.disk) || Plotly.Icons.camera,
    click: (/** @type {ChartNode} */ gd) => Plotly.downloadImage(gd, { format: "svg", filename: config.toImageButtonOptions.filename,
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
/** @param {any} point a Plotly event's point @returns {Partial<Click> | null} */
function clickedPositions(point) {
  const meta = point.data.meta || {};
  if (meta.side) return { [meta.side]: meta.first + point.pointNumber };
  if (meta.scatter === "query") return { query: Number(point.customdata[2]), line: Number(point.customdata[1]) - 1 };
  if (!Array.isArray(point.pointNumber)) return null;
  const factor = meta.factor || 1, [row, column] = point.pointNumber, [query0, key0] = meta.first || [0, 0];
  return { query: query0 + row * factor, key: key0 + (meta.stride ? column % meta.stride : column) * factor };
}

/** @param {ChartNode} node */
function listen(node) {
  node.on("plotly_click", (event) => {
    const point = event.points && event.points[0];
    if (node.al.marks) { markPoints(node, point ? [point] : []); return; }  // a grid marked here (class_tally.js)
    const clicked = point && clickedPositions(point);
    if (!clicked || !node.al.clickable || !node.al.setTrigger) return;
    const at = Date.now(), tell = () => node.al.setTrigger?.(AL.CLICK, { ...clicked, at });  // the latest one
    // viz/panels.js draws the focus at once where the figure says how; the server hears of it once the outlines
    // are on the screen (its run's messages would hold that frame back)
    if (drawFocus(node, point)) afterPaint(tell); else tell();
  });
  node.on("plotly_selected", (event) => { if (node.al.marks && event) markPoints(node, event.points || []); });
  node.on("plotly_buttonclicked", () => { if (node.al.marks) sendMarks(node); });
  node.on("plotly_hover", (event) => {
    const point = event.points && event.points[0], meta = point && point.data.meta;
    if (node.al.lines && meta && meta.side) hoverLines(node, meta.side, point.pointNumber);
  });
  // A legend click on a chart whose groups the page keeps: toggled at once (Plotly's own would wait out its
  // double-click delay, 300 ms), then told to the server.
  node.on("plotly_legendclick", (event) => {
    if (hiddenOf(node.al.head) === null || !event.data[event.curveNumber].legendgroup) return true;
    toggleGroup(node, event.data[event.curveNumber].legendgroup);
    return false;  // Plotly's own toggle not run
  });
  // Plotly's double click shows one group alone: a state the page would not keep (nor the link); not run there
  node.on("plotly_legenddoubleclick", () => hiddenOf(node.al.head) === null);
  node.on("plotly_unhover", (event) => {
    const point = event.points && event.points[0], meta = point && point.data.meta;
    if (node.al.lines && meta && meta.side) hoverLines(node, meta.side, null);
  });
}

// The traces of a chart's text as sent: from "figure" up to its "layout" key (a key's quotes are never escaped; a
// quote in a token is). A move that changes the layout alone (a focus outline, a title) keeps the traces drawn:
// Plotly.react given the same trace objects recomputes none of them, and a change of the shapes and the title
// alone (a focused token: the outlines, the head view's lines and what its title counts) is a relayout of those
// two: ~60 → ~5 ms for a 64 × 64 head grid here.
/** @param {string} text */
function tracesText(text) {
  const start = text.indexOf('"figure":');
  return text.slice(start, text.indexOf('"layout":', start));
}

// `layout` without the keys named (a dotted name: a key of a key), left out rather than set to null: a layout that
// gains its first focus outline would otherwise place "shapes" elsewhere in the text and compare as another layout.
/** @param {PlotlyLayout} layout @param {string[]} names */
function withoutKeys(layout, names) {
  /** @type {PlotlyLayout} */
  const kept = { ...layout, meta: { ...(layout.meta || {}) } };
  for (const name of names) {
    const [first, second] = name.split(".");
    if (second) delete kept[first][second]; else delete kept[first];
  }
  return kept;
}

// What to draw: {figure, config, plotly_url, traces}; `traces` names the figure's traces (a stepped chart's
// figures and its step, or a single figure's trace text) so that a move that keeps them redraws only the layout.
/** @param {ChartNode} node
 * @returns {{figure: PlotlyFigure, config: Record<string, any>, plotly_url: string, column: number, traces: string}} */
function shownFigure(node) {
  const parsed = node.al.parsed, head = node.al.head;
  if (!parsed.frames || !head) {
    /** @type {ChartMessage} */
    const message = JSON.parse(node.al.text);
    return { ...message, figure: /** @type {PlotlyFigure} */ (message.figure), traces: tracesText(node.al.text) };
  }
  const stepped = /** @type {SteppedChartMessage} */ (parsed);  // its frames came: the whole message
  node.al.shownStep = shownStep(stepped);
  return { figure: /** @type {PlotlyFigure} */ (structuredClone(stepped.frames[node.al.shownStep])),
           config: stepped.config, plotly_url: stepped.plotly_url, column: stepped.column,
           traces: framesKey(node.al.text, head) + "#" + node.al.shownStep };
}

// node.al.text's figure (a stepped chart's: its step's), in node.al.theme's colours, with the key labels that fit
// (one Plotly.react). Out of view (unless `evenOutOfView`), only the chart's height is set (the page keeps its
// layout) and the draw waits until it is in view.
/** @param {ChartNode} node @param {boolean} evenOutOfView @returns {Promise<void> | undefined} */
function draw(node, evenOutOfView = false) {
  const { figure, config, plotly_url, traces, column } = shownFigure(node);
  roomForToolbar(figure.layout, (node.parentElement || node).clientWidth);
  node.style.height = (figure.layout.height || 450) + "px";
  keepMinWidth(node, (figure.layout.meta || {}).min_width_px);
  reportWidth(node);
  node.al.stale = !(node.al.inView || evenOutOfView);
  if (node.al.stale || waitsForFit(node, column)) return;
  const drawing = (node.al.drawing || 0) + 1;
  node.al.drawing = drawing;
  // a figure drawn before, with other traces than those drawn now (drawing_copies.js): its copy now, Plotly's drawing
  // when the browser is idle
  if (traces !== node.al.drawnTraces && showPicture(node, drawingKey(node, traces))) {
    node.al.drawnStep = node.al.shownStep;
    afterPaint(() => plotted(node, drawing, figure, config, plotly_url, traces, true));
    return;
  }
  return plotted(node, drawing, figure, config, plotly_url, traces);
}

// Plotly's drawing of draw()'s figure (unless a later draw began), then its copy kept (drawing_copies.js) and any copy
// shown over the chart taken away. `kept`: the figure's copy is on the screen already (node.al.drawingKept says so
// while Plotly is called: bench/moves.py counts these draws apart).
/** @param {ChartNode} node @param {number} drawing @param {PlotlyFigure} figure @param {Record<string, any>} config
 * @param {string} plotly_url @param {string} traces @param {boolean} kept @returns {Promise<void>} */
function plotted(node, drawing, figure, config, plotly_url, traces, kept = false) {
  return loadPlotly(plotly_url).then((Plotly) => {
    if (node.al.drawing !== drawing) return;
    node.al.drawingKept = kept;
    try { return plottedNow(node, drawing, figure, config, traces, Plotly); } finally { node.al.drawingKept = false; }
  }).catch((error) => {
    dropPicture(node);
    node.textContent = "The chart could not be drawn: " + error.message;
  });
}

/** @param {ChartNode} node @param {number} drawing @param {PlotlyFigure} figure @param {Record<string, any>} config
 * @param {string} traces @param {any} Plotly @returns {Promise<void> | undefined} */
function plottedNow(node, drawing, figure, config, traces, Plotly) {
  node.al.keyLabels = chosenKeyLabels(figure.layout);
  const fitted = fitKeyLabels(figure.layout, figure.data, node.clientWidth, node.al.keyLabels);
  for (const [name, kept] of Object.entries(fitted)) figure.layout[name] = { ...figure.layout[name], tickvals: kept };
  node.al.clickable = Boolean((figure.layout.meta || {}).click);
  node.classList.toggle("al-lines", Boolean((figure.layout.meta || {}).head_view));  // ui/frontend/chart.css
  const layout = themedLayout(figure.layout, node.al.theme);
  // what a relayout would not redraw (the head view's meta.lines name the shapes' lines: they go with the shapes)
  const lines = (layout.meta || {}).lines;
  const rest = JSON.stringify(withoutKeys(layout, ["shapes", "title", "meta.lines", "meta.focus"]));
  // the groups this browser shows hidden; the server's on a first draw, or when it changed them (a reset, a link)
  const serverHidden = hiddenOf(node.al.head);
  const hidden = serverHidden !== null && (!node.data || node.al.serverHidden !== JSON.stringify(serverHidden))
    ? new Set(serverHidden) : hiddenGroups(node);
  node.al.serverHidden = JSON.stringify(serverHidden);
  if (serverHidden !== null) layerGroupsOf(node);  // group_layers.js: each group's lines a layer of their own
  layout.shapes = hideGroups(layout.shapes || [], hidden);
  const title = JSON.stringify(layout.title || ""), sameHidden = sameGroups(hidden, hiddenGroups(node));
  const shapes = shapesText(layout.shapes);
  if (node.data && traces === node.al.drawnTraces && rest === node.al.drawnLayout && sameHidden) {  // shapes, title
    node.layout.meta = layout.meta;  // (not drawn) a grid's focus as the server has it now
    if (shapes === node.al.shapes && title === node.al.drawnTitle) {  // a focus this browser drew already
      node.al.drawnStep = node.al.shownStep;
      shown(node, drawing, traces);
      return;
    }
    /** @type {PlotlyLayout} */
    const update = { shapes: layout.shapes };
    if (title !== node.al.drawnTitle) update.title = layout.title || null;  // a title redraw: ~5 ms
    node.al.drawnTitle = title;
    node.al.shapes = shapes;
    return Plotly.relayout(node, update).then(() => {
      keepLines(node, lines);
      node.al.drawnStep = node.al.shownStep;
      shown(node, drawing, traces);
    });
  }
  const data = node.data && traces === node.al.drawnTraces && sameHidden ? node.data : hideGroups(figure.data, hidden);
  return Plotly.react(node, data, layout, exportConfig(config, Plotly))
    .then(() => {
      node.al.drawnTraces = traces;
      node.al.drawnLayout = rest;
      node.al.drawnTitle = title;
      node.al.shapes = shapes;
      if (!node.al.listening) { listen(node); node.al.listening = true; }
      keepLines(node, lines);
      keepMarks(node, layout.meta);
      node.al.drawnStep = node.al.shownStep;  // a stepped chart's step now on screen (bench/moves.py waits for it)
      shown(node, drawing, traces);
    });
}

// Plotly's drawing of `drawing` is on the chart: its copy is made when the browser is next idle, not in the frame
// that shows the move (a copy serves a later move; docs/performance.md), unless another draw or a focus drawn in the
// browser (viz/panels.js) changed the chart meanwhile.
/** @param {ChartNode} node @param {number} drawing @param {string} traces */
function shown(node, drawing, traces) {
  if (node.al.drawing !== drawing) return;
  dropPicture(node);
  const key = drawingKey(node, traces), shapes = node.al.shapes;
  afterPaint(() => {
    if (node.al.drawing === drawing && node.al.shapes === shapes) keepPicture(node, key);
  });
}

/** A chart's state when its node is made: nothing sent, drawn or told yet. @param {Element} node @returns {ChartState} */
function newChartState(node) {
  return {
    text: "", head: null, parsed: {}, shownStep: -1, drawnStep: -1, theme: themeOf(node), inView: false, stale: false,
    drawing: 0, drawingKept: false, drawnTraces: null, drawnLayout: null, drawnTitle: null, shapes: null,
    keyLabels: {}, clickable: false, listening: false, lines: null, marks: null, minWidth: 0, reported: 0, fitTimer: 0,
    fitWaitOver: false, serverHidden: "", toldHidden: null, toldHiddenAt: 0, hiddenDrawn: 0, groupLayers: null,
    layersWatcher: null, pictures: new Map(), picture: null, picturesShown: 0, setTrigger: null, setState: null,
    cleanup: () => {},
  };
}

/** The chart's node in `parentElement`, its state, and what it watches. @param {HTMLElement} parentElement */
function setUp(parentElement) {
  const node = /** @type {ChartNode} */ (document.createElement("div"));
  node.className = AL.CHART_CLASS;
  parentElement.appendChild(node);
  node.al = newChartState(node);  // the theme then kept by a switch (watchTheme): not read again on every draw
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
    if (node.al.stale) draw(node, true);
  };
  window.addEventListener("beforeprint", drawForPrint);
  const unwatchTheme = watchTheme(node, parentElement);
  const followStep = (/** @type {CustomEvent<{group: string}>} */ event) => {  // its step control moved here
    if (node.al.parsed.frames && event.detail.group === node.al.parsed.group &&
        shownStep(node.al.parsed) !== node.al.shownStep) draw(node);
  };
  window.addEventListener("al-step", followStep);
  node.al.cleanup = () => {
    clearTimeout(node.al.fitTimer);
    resize.disconnect();
    visibility.disconnect();
    unwatchTheme();
    window.removeEventListener("beforeprint", drawForPrint);
    window.removeEventListener("al-step", followStep);
    node.al.pictures.clear();
    if (node.al.layersWatcher) node.al.layersWatcher.disconnect();
    if (window.Plotly) window.Plotly.purge(node);
  };
  return node;
}

// A theme switch (the viewer's settings, or the system's light/dark) restyles the wrapper, not the figure. Read once
// the switch has settled (it restyles more than one element). Returns what stops the watching.
/** @param {ChartNode} node @param {HTMLElement} parentElement @returns {() => void} */
function watchTheme(node, parentElement) {
  let pending = 0;
  const retheme = new MutationObserver(() => {
    if (pending) return;
    pending = window.setTimeout(() => {
      pending = 0;
      const theme = themeOf(node);
      if (!node.al.text || theme.join() === node.al.theme.join()) return;
      node.al.theme = theme;
      draw(node);
    }, 50);
  });
  for (let /** @type {HTMLElement | null} */ wrapper = parentElement, level = 0; wrapper && level < 2;
    wrapper = wrapper.parentElement, level++)
    retheme.observe(wrapper, { attributes: true, attributeFilter: ["class", "style"] });
  return () => { retheme.disconnect(); clearTimeout(pending); };
}

/** Streamlit calls it with each message (a chart's or a stepped chart's: ui/chart_protocol.py).
 * @param {ComponentArgs} component */
export default function (component) {
  const { data, parentElement, setTriggerValue, setStateValue } = component;
  const node = /** @type {ChartNode | null} */ (parentElement.querySelector("." + AL.CHART_CLASS)) || setUp(parentElement);
  node.al.setTrigger = setTriggerValue;
  node.al.setState = setStateValue;
  const text = new TextDecoder().decode(data);
  if (text === node.al.text) return node.al.cleanup;  // an unchanged figure is not drawn again
  const head = headOf(text);
  if (onlyHiddenCaughtUp(node, text, head)) {
    node.al.text = text;
    node.al.head = head;
    node.al.serverHidden = JSON.stringify(hiddenOf(head));
    return node.al.cleanup;
  }
  const stepped = head.kind === "stepped";
  const same = stepped && node.al.parsed.frames && node.al.head !== null &&
    framesKey(text, head) === framesKey(node.al.text, node.al.head);
  node.al.text = text;
  node.al.head = head;
  node.al.parsed = same ? { ...node.al.parsed, index: head.index } : stepped ? JSON.parse(text) : {};
  // a stepped chart whose figures came again (the server caught up with a step drawn here) is not drawn again
  if (!same || shownStep(node.al.parsed) !== node.al.shownStep) draw(node);
  return node.al.cleanup;  // Streamlit keeps the last one returned and calls it on unmount
}
