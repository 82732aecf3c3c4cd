// What the browser code keeps, declared for TypeScript's checker (make lint): a chart's state, a step control's,
// and what Plotly and the page add to the window. The server's messages and constants are in server.d.ts,
// generated from ui/chart_protocol.py.

/** A copy of a drawing (drawing_copies.js). */
interface Picture {
  look: string;  // the theme and width it was drawn at
  drawnAs: string;  // and the shapes and title
  picture: HTMLElement;
}

/** One chart's state, all of it (chart.js newChartState): what the server sent, what is drawn, what was told. */
interface ChartState {
  text: string;  // the message as sent
  head: MessageHead | null;  // its keys but the last (chart_messages.js)
  parsed: Partial<SteppedChartMessage>;  // a stepped chart's message, parsed; {} for a chart
  shownStep: number;  // a stepped chart's step drawn or to draw
  drawnStep: number;  // and the one now on the screen (bench/moves.py waits for it)
  theme: string[];  // [background, text, border]
  inView: boolean;
  stale: boolean;  // its figure changed out of view: drawn when it comes into view
  drawing: number;  // the draw now under way; an older one's work stops
  drawingKept: boolean;  // Plotly is drawing a figure whose copy is on the screen
  drawnTraces: string | null;
  drawnLayout: string | null;
  drawnTitle: string | null;
  shapes: string | null;  // the shapes drawn, as text (panels.js shapesText)
  keyLabels: Record<string, unknown[]>;  // the key labels the server chose, by axis
  clickable: boolean;
  listening: boolean;
  lines: Map<number, {lines: number[][], offset: number}> | null;  // the head view's lines and offset (viz/head_view.js)
  marks: boolean[][] | null;  // a grid a student marks here, as marked now (viz/class_tally.js)
  minWidth: number;
  reported: number;  // the column's width told to the server
  fitTimer: number;
  fitWaitOver: boolean;
  serverHidden: string;  // the legend groups the server sent hidden, as text
  toldHidden: string[] | null;
  toldHiddenAt: number;
  hiddenDrawn: number;  // legend toggles drawn (bench/moves.py waits for it)
  groupLayers: Map<string, SVGSVGElement> | null;  // group_layers.js
  layersWatcher: MutationObserver | null;
  pictures: Map<string, Picture>;  // drawing_copies.js
  picture: HTMLElement | null;  // the copy over the chart now
  picturesShown: number;  // copies shown (the browser tests watch it)
  setTrigger: ((name: string, value: Click | Legend | Cells) => void) | null;
  setState: ((name: string, value: number) => void) | null;
  cleanup: () => void;
}

/** A chart's node: Plotly's graph div, its state under `al`. */
interface ChartNode extends HTMLDivElement {
  al: ChartState;
  data: PlotlyTrace[];  // Plotly's, once drawn
  layout: PlotlyLayout;
  _fullLayout: PlotlyLayout;
  _fullData: PlotlyTrace[];
  on(event: string, handler: (event: any) => unknown): void;
}

/** A step control's state (stepper.js). */
interface StepperState {
  back: HTMLButtonElement;
  next: HTMLButtonElement;
  name: HTMLSpanElement;
  range: HTMLInputElement;
  caption: HTMLDivElement;
  index: number;  // the step shown
  told: number;  // the step last told to the server
  toldAt: number;
  payload: StepperMessage | null;
  setTrigger: ((name: string, value: Step) => void) | null;
}

interface StepperNode extends HTMLDivElement {
  al: StepperState;
}

/** What a Streamlit component's function is given (components v2). */
interface ComponentArgs {
  data: ArrayBuffer | Uint8Array;
  parentElement: HTMLElement;
  setTriggerValue: (name: string, value: any) => void;
  setStateValue: (name: string, value: any) => void;
}

// Plotly's figures are its JSON: open objects here.
type PlotlyTrace = Record<string, any>;
type PlotlyShape = Record<string, any>;
type PlotlyLayout = Record<string, any> & { shapes?: PlotlyShape[]; meta?: Record<string, any> };
type PlotlyFigure = { data: PlotlyTrace[]; layout: PlotlyLayout };

interface Window {
  Plotly: any;  // Plotly.js, loaded once (load_plotly.js)
  alSteps: Record<string, number>;  // each step group's step in this browser (stepper.js)
  __attentionLabPlotly: Promise<any> | undefined;
  __attentionLabFade: boolean;
  __attentionLabHistory: boolean;
  __attentionLabLinks: boolean;
}

interface WindowEventMap {
  "al-step": CustomEvent<{ group: string; index: number }>;  // a step control moved (stepper.js)
}
