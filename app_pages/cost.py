"""Cost: time and memory of one attention layer against N, for mask families and key/value heads."""

import streamlit as st

from transformer.service import (
    QUERY_BLOCK,
    describe,
    differ,
    fit_range,
    quadratic_crossover,
    quadratic_share,
    supported,
)
from ui import choices, data, model_config, openings, state
from ui.controls import PERSIST, plot
from ui.sidebar import session_device
from ui.state import F
from ui.text import percent
from viz.cost import cost_figure


def noise_note(series) -> str:
    """Which exponents differ beyond the runs' noise, compared with the full mask's (the first series); none when
    the full mask's timings support no exponent, and a series whose timings support none is left out."""
    full, others = series[0], [one for one in series[1:] if supported(one)]
    if not supported(full):
        return ("Against the full mask: its own runs disagree too much to fit an exponent (this machine was busy), so "
                "no growth is compared: measure again.")
    within = [one.label for one in others if not differ(full.spread, one.spread)]
    beyond = [one.label for one in others if differ(full.spread, one.spread)]
    if not within and not beyond:
        return "Against the full mask: no other series' runs agree enough to compare their growth: measure again."
    said = []
    if within:
        said.append(f"{', '.join(within)}: within the runs' spread of **{full.label}**'s exponent, so no difference "
                    "in growth is measured here")
    if beyond:
        said.append(f"{', '.join(beyond)}: outside it, a difference beyond this machine's noise")
    return "Against the full mask: " + "; ".join(said) + "."


def exponent_line(one, span) -> str:
    """One series' exponent, or why none is shown: too few lengths, or runs that disagree (`supported`)."""
    if not span:
        return f"- **{one.label}**: too few lengths from 256 up to fit an exponent"
    runs = f"each of the {len(one.exponents)} runs alone: {one.spread[0]:.2f} to {one.spread[1]:.2f}"
    if not supported(one):
        return f"- **{one.label}**: no exponent: its runs disagree ({runs}), more than the growth they would measure"
    return f"- **{one.label}**: time ∝ N^{one.exponent:.2f} from N = {span[0]} to {span[1]} ({runs})"


def memory_note(measured: bool, on_gpu: bool) -> str:
    """What the memory panel shows: TensorFlow's measured peak, or bytes counted from the shapes."""
    if not measured:
        return ("Memory on the CPU is counted from the tensors a block makes: with malloc "
                "(`TF_CPU_ALLOCATOR_USE_BFC=false`) TensorFlow keeps no CPU allocation statistics; `make bench` "
                "measures the peak in a fresh process.")
    where = "GPU" if on_gpu else "CPU (its allocator is TensorFlow's pool, which counts what it hands out)"
    return f"Memory: TensorFlow's measured peak for the runs on the {where}."


def timed_size(values: dict) -> tuple[int, int, str]:
    """``(d_model, heads, whose)``: the size of the model the sidebar shows (a trained model's own, a model from
    outside's width and heads), or the sidebar's sliders; ``whose`` says which, in words."""
    spec = model_config.source().own_shape()
    if spec is not None:
        return spec.d_model, spec.num_heads, "the sidebar's model's own size"
    if model_config.supports().outside:
        try:
            info = describe(values["weights"])
        except ValueError:
            info = None
        if info is not None and info.width and info.heads and info.width % info.heads == 0:
            return info.width, info.heads, "your model's width and heads (its own layers are not timed here)"
    return values["d_model"], values["heads"], "the sidebar's size"


def crossovers(series, d_model: int) -> list[tuple[float, str]]:
    """Each series' N where its N² terms are half its FLOPs (its key/value heads move it), once each, in words."""
    seen = {}
    for one in series:
        seen.setdefault(quadratic_crossover(d_model, one.kv_share), one.label.split(", ")[-1])
    return [(n, f" ({what})" if len(seen) > 1 else "") for n, what in seen.items()]


openings.show("cost")
values = state.current_values()
d_model, heads, whose = timed_size(values)
device = session_device()
st.markdown(f"One multi-head attention layer of {whose} (d_model = {d_model}, {heads} heads), on random inputs, at "
            "N = 64 … the longest length below, run block-wise (128 queries at a time) as the engine runs long "
            "sequences: under a full mask, a sliding window of 128, the Sparse Transformer's stride of 64, and with "
            "fewer key/value heads.")
on_gpu = device.startswith("/GPU")
left, right = st.columns([2, 3])
longest = left.select_slider("Longest N", choices.COST_MAXIMA, key=F.cost_max, **PERSIST)
key = (d_model, heads, device, longest)
measured = st.empty()  # the measurement's spinner, then its chart, replace the message asking for it
if right.button("Measure", type="primary", help="Takes a few seconds (longer at N = 4096); the engine serves "
                "other sessions' moves in between.") or data.cost_measured(*key):
    with measured.container():
        series = data.attention_cost(*key)
    lengths = series[0].lengths
    span = fit_range(lengths)
    marked = [(n, what) for n, what in crossovers(series, d_model) if lengths[0] <= n <= lengths[-1]]
    plot(cost_figure(series, "GPU" if on_gpu else "CPU", quadratic_from=marked), "cost")
    st.markdown("\n".join(exponent_line(one, span) for one in series))
    if span:
        st.markdown(noise_note(series))
    st.markdown("The N² terms (Q·Kᵀ and weights · V, 4·N²·d_model FLOPs) against the projections' "
                "(4·N·d_model²·(1 + H_kv/H)): half the layer's FLOPs from N = d_model·(1 + H_kv/H)"
                + (" (the red lines)" if marked else "") + ":\n" + "\n".join(
                    f"- **{one.label}**: " + ", ".join(f"{percent(quadratic_share(n, d_model, one.kv_share))} at "
                                                       f"N = {n}" for n in (lengths[0], lengths[-1]))
                    + f", half from N = {quadratic_crossover(d_model, one.kv_share):g}"
                    for one in series if one.label.startswith("full mask")))
    st.markdown("The time grows more slowly than N² "
                f"because this engine runs N/{QUERY_BLOCK} query blocks, each with fixed per-operation costs "
                f"that grow linearly with N in all: on {'the GPU' if on_gpu else 'a CPU'} at these sizes they are "
                "much of the time, so the slope approaches 2 only as N grows.")
    st.caption(f"Each block of {QUERY_BLOCK} queries attends only over the keys some query of it may attend, "
               "when those are at most half the keys (otherwise over every key): a window of 128 and the stride of 64 "
               "leave a few hundred keys a block, so their time grows about as N, and a causal mask's early blocks "
               "attend over their past alone. Within a block every kept score is computed and the blocked ones "
               "masked: a sparse kernel would compute only the allowed cells (their share is in each point's hover). "
               "Fewer key/value heads shrink the keys and values kept (a decoder's cache), not "
               "the H·N² scores, and this engine (like Keras's GroupQueryAttention) repeats them to every head "
               "before the scores. The exponent is fitted over the longest three lengths measured "
               "(from 256 up). " + memory_note(series[0].measured, on_gpu))
else:
    measured.info(f"Press **Measure** to time d_model = {d_model}, {heads} heads ({whose}) on this session's device "
            f"({'GPU' if on_gpu else 'CPU'}) up to N = {longest}.", icon=":material/speed:")
