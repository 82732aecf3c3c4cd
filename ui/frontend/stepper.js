// The step control (ui/stepper.py): Back, Next and a range, drawn here. A move redraws the charts of its group in
// this browser at once (window.alSteps and an "al-step" event: ui/frontend/chart.js), then tells the server (a
// trigger value), whose run keeps the link and the page's state current and sends the same charts (none redrawn).
const SETTLE_MS = 2000;  // within this long of a move here, a server's step that is not the one told is stale

function element(tag, className, parent) {
  const made = document.createElement(tag);
  if (className) made.className = className;
  parent.appendChild(made);
  return made;
}

function setUp(parentElement) {
  const node = element("div", "al-stepper", parentElement);
  const row = element("div", "al-stepper-row", node);
  node.alBack = element("button", "al-stepper-button", row);
  node.alBack.textContent = "◀ Back";
  node.alNext = element("button", "al-stepper-button", row);
  node.alNext.textContent = "Next ▶";
  const label = element("label", "al-stepper-label", row);
  node.alName = element("span", "", label);
  node.alRange = element("input", "al-stepper-range", label);
  node.alRange.type = "range";
  node.alRange.step = "1";
  node.alCaption = element("div", "al-stepper-caption", node);
  node.alCaption.setAttribute("aria-live", "polite");
  node.alBack.addEventListener("click", () => show(node, node.alIndex - 1, true));
  node.alNext.addEventListener("click", () => show(node, node.alIndex + 1, true));
  node.alRange.addEventListener("input", () => show(node, Number(node.alRange.value), false));  // dragging
  node.alRange.addEventListener("change", () => show(node, Number(node.alRange.value), true));  // let go, a key
  return node;
}

function caption(node, segments) {  // [[text, style] …]: style "b" bold, "code" code, "b code" both; text as text
  node.alCaption.replaceChildren();
  for (const [text, style] of segments || []) {
    let inner = node.alCaption;
    if (style.includes("b")) inner = element("strong", "", inner);
    if (style.includes("code")) inner = element("code", "", inner);
    inner.appendChild(document.createTextNode(text));
  }
}

// Show step ``index`` (clamped): the control, the caption, the group's charts; ``tell``: and the server.
function show(node, index, tell) {
  const { group, label, names, captions } = node.alPayload;
  const step = Math.max(0, Math.min(index, names.length - 1));
  const last = names.length - 1;
  node.alIndex = step;
  node.alRange.max = String(Math.max(last, 1));
  node.alRange.value = String(step);
  node.alRange.disabled = last < 1;
  node.alRange.setAttribute("aria-label", label);
  node.alRange.setAttribute("aria-valuetext", `${label} ${names[step]}`);
  node.alName.textContent = `${label} ${names[step]}`;
  node.alBack.disabled = step <= 0;
  node.alNext.disabled = step >= last;
  caption(node, captions[step]);
  window.alSteps = { ...(window.alSteps || {}), [group]: step };
  window.dispatchEvent(new CustomEvent("al-step", { detail: { group, index: step } }));
  if (tell && step !== node.alTold) {
    node.alTold = step;
    node.alToldAt = Date.now();
    afterPaint(() => node.alSetTrigger(AL.STEP, { index: step, at: node.alToldAt }));  // ui/chart_protocol.py
  }
}

export default function (component) {
  const { data, parentElement, setTriggerValue } = component;
  const node = parentElement.querySelector(".al-stepper") || setUp(parentElement);
  node.alSetTrigger = setTriggerValue;
  const payload = JSON.parse(new TextDecoder().decode(data));
  const fresh = !node.alPayload || node.alPayload.group !== payload.group;
  node.alPayload = payload;
  // the server's step, unless a move here is newer than what the server has answered
  const stale = !fresh && payload.index !== node.alTold && Date.now() - (node.alToldAt || 0) < SETTLE_MS;
  if (payload.index === node.alTold) node.alToldAt = 0;  // caught up
  show(node, stale ? node.alIndex : payload.index, false);
}
