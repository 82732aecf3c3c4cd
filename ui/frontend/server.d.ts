// Written by `python -m ui.browser_types` from ui/chart_protocol.py and ui/chart.py's constants.

/** The server's constants (ui/chart.py constants()), at the head of each component's code. */
declare const AL: Readonly<{ TICK_PX: number; NARROW_PX: number; CHART_CLASS: "al-chart"; STALE_FADE_ATTRIBUTE: "data-al-slow-run"; BULK: { chart: "figure"; stepped: "frames"; }; COLUMN_PX: "column_px"; CLICK: "click"; LEGEND: "legend"; CELLS: "cells"; STEP: "step"; }>;

/** A chart (`ui.chart.chart`). */
interface ChartMessage {
  kind: "chart";
  hidden?: string[];
  config: Record<string, any>;
  plotly_url: string;
  column: number;
  figure: Record<string, any>;
}

/** A chart of a step group (`ui.chart.stepped_chart`). */
interface SteppedChartMessage {
  kind: "stepped";
  index: number;
  group: string;
  config: Record<string, any>;
  plotly_url: string;
  column: number;
  frames: Record<string, any>[];
}

/** A step control (`ui.stepper.stepper`). */
interface StepperMessage {
  kind: "stepper";
  group: string;
  label: string;
  index: number;
  names: string[];
  captions: string[][][];
}

/** The early loader (`ui.chart.load_plotly_early`): what the browser fetches while the server imports. */
interface EarlyLoaderMessage {
  kind: "early";
  plotly_url: string;
  widget_modules: string[];
}

/** A heatmap cell (query and key), a head-view token (query or key), a query of the query–key space (query and line); ``at``: the time (ms), so that the same click twice is two. */
interface Click {
  query?: number;
  key?: number;
  line?: number;
  at: number;
}

interface Legend {
  hidden: string[];
  at: number;
}

/** Every cell of a grid the student marked, ``[query, key]``, sent at once. */
interface Cells {
  cells: number[][];
  at: number;
}

interface Step {
  index: number;
  at: number;
}

/** A chart's message but its last key (AL.BULK): what chart_messages.js parses alone. */
type MessageHead = Omit<ChartMessage, "figure"> | Omit<SteppedChartMessage, "frames">;
