"""Cost: time and memory of one attention layer against N, for mask families and key/value heads."""

import streamlit as st

from ui import data, state
from ui.controls import PERSIST, plot
from ui.sidebar import session_device
from viz.cost import cost_figure

st.title("Cost")
st.markdown("One multi-head attention layer of the sidebar's size, on random inputs, at N = 64 … the longest "
            "length below, run block-wise (128 queries at a time) as the engine runs long sequences: under a full "
            "mask, a sliding window of 128, the Sparse Transformer's stride of 64, and with fewer key/value heads.")
values = state.current_values()
d_model, heads, device = values["d_model"], values["heads"], session_device()
on_gpu = device.startswith("/GPU")
left, right = st.columns([2, 3])
longest = left.select_slider("Longest N", state.COST_MAXIMA, key="cost_max", **PERSIST)
key = (d_model, heads, device, longest)
if right.button("Measure", type="primary", help="Takes a few seconds (longer at N = 4096); the engine serves "
                "other sessions' moves in between.") or data.cost_measured(*key):
    series = data.cost(*key)
    plot(cost_figure(series, "GPU" if on_gpu else "CPU"), "cost")
    st.markdown("\n".join(f"- **{one.label}**: time ∝ N^{one.exponent:.2f}" if one.exponent == one.exponent
                          else f"- **{one.label}**: too few lengths from 256 up to fit an exponent" for one in series))
    st.caption("This engine computes every query–key score and masks the blocked ones, so a window or a stride "
               "saves no time here (the allowed share of cells is in each point's hover): a sparse kernel would "
               "compute only those. Fewer key/value heads shrink the keys and values kept (a decoder's cache), not "
               "the H·N² scores, and this engine (like Keras's GroupQueryAttention) repeats them to every head "
               "before the scores. Below N ≈ 256 fixed per-operation costs dominate; the exponent is fitted from 256 "
               "up. " + ("Memory: TensorFlow's measured peak on the GPU." if on_gpu else
                         "Memory on the CPU is counted from the tensors a block makes (TensorFlow keeps no CPU "
                         "allocation statistics); `make bench` measures the peak in a fresh process."))
else:
    st.info(f"Press **Measure** to time d_model = {d_model}, {heads} heads on this session's device "
            f"({'GPU' if on_gpu else 'CPU'}) up to N = {longest}.", icon=":material/speed:")
