// @ts-check
// The step control (ui/stepper.py): Back, Next and a range, drawn here. A move redraws the charts of its group in
// this browser at once (window.alSteps and an "al-step" event: ui/frontend/chart.js), then tells the server (a
// trigger value), whose run keeps the link and the page's state current and sends the same charts (none redrawn).
const SETTLE_MS = 2000;  // within this long of a move here, a server's step that is not the one told is stale

/** @template {keyof HTMLElementTagNameMap} K @param {K} tag @param {string} className @param {HTMLElement} parent */
function element(tag, className, parent) {
  const made = document.createElement(tag);
  if (className) made.className = className;
  parent.appendChild(made);
  return made;
}

/** The control's node in `parentElement`: Back, Next, the range and the caption. @param {HTMLElement} parentElement */
function setUp(parentElement) {
  const node = /** @type {StepperNode} */ (element("div", "al-stepper", parentElement));
  const row = element("div", "al-stepper-row", node);
  const back = element("button", "al-stepper-button", row), next = element("button", "al-stepper-button", row);
  back.textContent = "◀ Back";
  next.textContent = "Next ▶";
  const label = element("label", "al-stepper-label", row);
  const name = element("span", "", label), range = element("input", "al-stepper-range", label);
  range.type = "range";
  range.step = "1";
  const caption = element("div", "al-stepper-caption", node);
  caption.setAttribute("aria-live", "polite");
  node.al = { back, next, name, range, caption, index: 0, told: -1, toldAt: 0, payload: null, setTrigger: null };
  back.addEventListener("click", () => show(node, node.al.index - 1, true));
  next.addEventListener("click", () => show(node, node.al.index + 1, true));
  range.addEventListener("input", () => show(node, Number(range.value), false));  // dragging
  range.addEventListener("change", () => show(node, Number(range.value), true));  // let go, a key
  return node;
}

/** [[text, style] …]: style "b" bold, "code" code, "b code" both; text as text.
 * @param {StepperNode} node @param {string[][]} segments */
function caption(node, segments) {
  node.al.caption.replaceChildren();
  for (const [text, style] of segments || []) {
    /** @type {HTMLElement} */
    let inner = node.al.caption;
    if (style.includes("b")) inner = element("strong", "", inner);
    if (style.includes("code")) inner = element("code", "", inner);
    inner.appendChild(document.createTextNode(text));
  }
}

// Show step ``index`` (clamped): the control, the caption, the group's charts; ``tell``: and the server.
/** @param {StepperNode} node @param {number} index @param {boolean} tell */
function show(node, index, tell) {
  const payload = node.al.payload;
  if (!payload) return;  // not told its steps yet
  const { group, label, names, captions } = payload;
  const step = Math.max(0, Math.min(index, names.length - 1));
  const last = names.length - 1;
  node.al.index = step;
  node.al.range.max = String(Math.max(last, 1));
  node.al.range.value = String(step);
  node.al.range.disabled = last < 1;
  node.al.range.setAttribute("aria-label", label);
  node.al.range.setAttribute("aria-valuetext", `${label} ${names[step]}`);
  node.al.name.textContent = `${label} ${names[step]}`;
  node.al.back.disabled = step <= 0;
  node.al.next.disabled = step >= last;
  caption(node, captions[step]);
  window.alSteps = { ...(window.alSteps || {}), [group]: step };
  window.dispatchEvent(new CustomEvent("al-step", { detail: { group, index: step } }));
  if (tell && step !== node.al.told) {
    const at = Date.now();
    node.al.told = step;
    node.al.toldAt = at;
    afterPaint(() => node.al.setTrigger?.(AL.STEP, { index: step, at }));  // ui/chart_protocol.py
  }
}

/** Streamlit calls it with each message (a StepperMessage). @param {ComponentArgs} component */
export default function (component) {
  const { data, parentElement, setTriggerValue } = component;
  const node = /** @type {StepperNode | null} */ (parentElement.querySelector(".al-stepper")) || setUp(parentElement);
  node.al.setTrigger = setTriggerValue;
  /** @type {StepperMessage} */
  const payload = JSON.parse(new TextDecoder().decode(data));
  const fresh = !node.al.payload || node.al.payload.group !== payload.group;
  node.al.payload = payload;
  // the server's step, unless a move here is newer than what the server has answered
  const stale = !fresh && payload.index !== node.al.told && Date.now() - (node.al.toldAt || 0) < SETTLE_MS;
  if (payload.index === node.al.told) node.al.toldAt = 0;  // caught up
  show(node, stale ? node.al.index : payload.index, false);
}
