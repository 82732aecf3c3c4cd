"""Cached engine calls for the pages. A bad configuration shows a message and stops the page.

"Computing…" is the caches' own spinner, so only a computation shows it: a ``st.spinner``
around every call costs a timer thread and a message to the browser on each rerun, hits included.
"""

from __future__ import annotations

import datetime
import functools

import numpy as np
import streamlit as st

import transformer
from transformer import LiveConfig, attention_walkthrough, keras_difference, run_live, score_terms, value_norms
from transformer.service import (
    COST_LENGTHS,
    attention_cost,
    attention_flow,
    available,
    check_cost,
    date_text,
    decode,
    example_maps,
    faithfulness,
    image_task,
    induction_study,
    measure_ablation,
    measure_cost,
    query_key_space,
    read_image,
    run_cost,
    scaling_experiment,
)
from transformer.service import example_image as draw_example_image
from transformer.service import head_importance as every_head_ablated
from transformer.service import head_roles as _head_roles_of
from transformer.service import memory_in_use as device_memory
from transformer.service import position_views as _position_views_of
from transformer.service import (
    timeline_of as kept_timeline,
)
from ui import state
from ui.heavy_runs import heavy_result
from ui.text import as_text, percent

COMPUTING = "Computing…"
COST_REPEATS = 5  # each length timed five times: an exponent is read against the spread of the five fits


@st.cache_resource(max_entries=12, show_spinner=COMPUTING)
def _live(config, stacks, lines, windows):
    return run_live(config, stacks=stacks, lines=lines, windows=windows)


@st.cache_resource(max_entries=4, show_spinner=COMPUTING)  # every intermediate: ~150 MB at N = 512 with 8 heads
def _walkthrough(config, stack, layer):
    return attention_walkthrough(config, stack, layer)


@st.cache_resource(max_entries=4, show_spinner=COMPUTING)
def _timeline_of(name: str):
    return kept_timeline(name)


def timeline_of(name: str):
    """The attention-over-training snapshots a model trained here was kept with (cached); on a damaged file, a
    message and the page stops."""
    return _or_stop(_timeline_of, name)


@st.cache_data(max_entries=16, show_spinner=COMPUTING)
def flow_of(weights, query: int):
    """`attention_flow` of ``query`` through ``weights (L, H, N, N)`` (cached on the weights): ``(N,)``."""
    return attention_flow(weights, queries=[query])[0]


@st.cache_resource(max_entries=8, show_spinner=COMPUTING)
def _value_norms(config, stack, line):
    return value_norms(config, stacks=(stack,), lines=(line,))[stack][:, 0]


def _costly(config, stack: str, lines):
    """The estimate of a view of ``stack`` beside its page's run when it is costly (it then runs in the background
    lane under the page's press: a view computes at most what the run does, and a costly page stops before its
    views until pressed); None when it is light (the engine thread)."""
    estimate = _or_stop(run_cost, config, (stack,), lines)
    return estimate if estimate.heavy else None


def norms_of(config, stack, line):
    """``(L, H, N_q, N_k)`` value-weighted norms ``‖α·f(x)‖`` of ``stack`` on ``line`` (cached)."""
    costly = _costly(config, stack, (line,))
    if costly:
        return heavy_result("value_norms", costly, config, pressed=True, stacks=(stack,), lines=(line,))[stack][:, 0]
    return _or_stop(_value_norms, config, stack, line)


@st.cache_resource(max_entries=8, show_spinner=COMPUTING)
def _score_terms(config, stack, layer, head, line, query):
    return score_terms(config, stack, layer, head, line, (query,))


def terms_of(config, stack, layer, head, line, query):
    """`transformer.score_terms` of one query of ``line`` (cached): its score for every key, split by parts."""
    costly = _costly(config, stack, (line,))
    if costly:
        return heavy_result("score_terms", costly, config, stack, layer, head, line, (query,), pressed=True)
    return _or_stop(_score_terms, config, stack, layer, head, line, query)


@st.cache_resource(max_entries=12, show_spinner=COMPUTING)
def _keras_difference(config, stack, layer, line):
    return keras_difference(config, stack, layer, line=line)


@st.cache_resource(max_entries=16, show_spinner=COMPUTING)
def _decoding(config, text, sample, temperature, top_k, top_p, seed):
    return decode(config, text, sample=sample, temperature=temperature, top_k=top_k, top_p=top_p, seed=seed)


def decoding(config, text, sample, temperature, top_k, top_p, seed):
    """`transformer.decoding.decode` of ``config``'s model on ``text`` (cached); on bad input a message and the page
    stops. The status line gives the device."""
    run = _or_stop(_decoding, config, text, sample, temperature, top_k, top_p, seed)
    _status(device=run.device_label, timing="")
    return run


@st.cache_resource(max_entries=8, show_spinner=COMPUTING)
def _head_roles(config, stack, pattern, pattern_size):
    return _head_roles_of(config, stack, pattern, pattern_size)


def head_roles(config, stack: str, pattern: str | None, pattern_size: int):
    """`transformer.live.head_roles.head_roles` (cached); on bad input a message and the page stops."""
    return _or_stop(_head_roles, config, stack, pattern, pattern_size)


@st.cache_resource(max_entries=8, show_spinner=COMPUTING)
def _query_key(config, stack, layer, head):
    return query_key_space(config, stack, layer, head)


def query_key(config, stack: str, layer: int, head: int):
    """`transformer.live.query_key.query_key_space` (cached); on bad input a message and the page stops."""
    return _or_stop(_query_key, config, stack, layer, head)


@st.cache_resource(max_entries=8, show_spinner=COMPUTING)
def _induction(seed, count, ablated, device):
    return induction_study(seed, count, ablated, "induction", device)


def induction(seed: int, count: int, ablated: str, device: str):
    """`transformer.live.induction.induction_study` of the shipped model (cached); on bad input a message."""
    return _or_stop(_induction, seed, count, ablated, device)


def explanations(name: str, count: int, device: str):
    """`transformer.live.faithfulness.faithfulness` of a trained model (kept by the engine); on bad input a
    message."""
    return _or_stop(faithfulness, name, count, 0, device)


@st.cache_resource(max_entries=16, show_spinner=COMPUTING)
def _example_maps(name: str, source_text: str, count: int, device: str):
    return example_maps(name, source_text, count, 0, device)


def explanation_example(name: str, source_text: str, count: int, device: str):
    """Every method's map of one source line (`transformer.live.faithfulness.example_maps`, cached); on a line
    not of the task's form a message."""
    return _or_stop(_example_maps, name, source_text, count, device)


@st.cache_resource(max_entries=64, show_spinner=False)
def _image_reading(name: str, pixels: bytes, device: str):
    return read_image(name, np.frombuffer(pixels, np.float32).reshape(8, 8), device)


def image_task_of(name: str) -> str:
    """The task an image model learned (`transformer.live.images.image_task`); on an unknown model a message."""
    return _or_stop(image_task, name)


def example_image(name: str, pick: int):
    """``(image (8, 8), label)``: a fresh match image of seed ``pick`` or digits' test image ``pick``; on bad input
    a message."""
    return _or_stop(draw_example_image, name, pick)


def image_reading(name: str, image, device: str):
    """`transformer.live.images.read_image` of one image (cached by its pixels); on bad input a message."""
    return _or_stop(_image_reading, name, np.asarray(image, np.float32).tobytes(), device)


def ablation_measure(name: str, ablate: tuple, count: int, kind: str, device: str) -> tuple[float, float]:
    """``(loss, exact accuracy)`` of a trained model with ``ablate`` ablated (`transformer.live.importance.measure`,
    remembered by the engine); on bad input a message and the page stops."""
    return _or_stop(measure_ablation, name, ablate, count, kind, 0, device)


def head_importance(name: str, count: int, kind: str, device: str):
    """`transformer.live.importance.head_importance` once every head is measured (`ablation_measure`); on bad input
    a message."""
    return _or_stop(every_head_ablated, name, count, kind, 0, device)


@st.cache_resource(max_entries=8, show_spinner=COMPUTING)
def _position_views(length: int, d_k: int, heads: int):
    return _position_views_of(length, d_k, heads)


def position_views(length: int, d_k: int, heads: int):
    """RoPE's angles and rotated dot products, ALiBi's biases (`transformer.analysis.position_views`), cached; on bad
    input a message and the page stops (outside the cache, as the other calls here)."""
    return _or_stop(_position_views, length, d_k, heads)


@st.cache_resource(max_entries=8, show_spinner="Measuring one attention layer at every length…")
def _cost(d_model: int, heads: int, device: str, longest: int):
    return attention_cost(d_model, heads, device, tuple(n for n in COST_LENGTHS if n <= longest), repeats=COST_REPEATS)


_MEASURED: set = set()  # the cost measurements made in this process (any session's)


def cost(d_model: int, heads: int, device: str, longest: int):
    """`transformer.analysis.cost.attention_cost` (cached per model size, device and longest N): on the engine
    thread when it is light, else in the background lane (the Measure button was its press)."""
    lengths = tuple(n for n in COST_LENGTHS if n <= longest)
    estimate = measure_cost(d_model, heads, lengths, COST_REPEATS)
    if estimate.heavy:
        series = heavy_result("attention_cost", estimate, d_model, heads, device, lengths, pressed=True,
                              repeats=COST_REPEATS)
    else:
        series = _or_stop(_cost, d_model, heads, device, longest)
    _MEASURED.add((d_model, heads, device, longest))
    return series


def cost_measured(d_model: int, heads: int, device: str, longest: int) -> bool:
    """Whether those measurements were made already (a page then draws them without a click)."""
    return (d_model, heads, device, longest) in _MEASURED


def todays_date(device: str = "auto"):
    """Home's picture: the dates model reading today's date, as Home runs it (cross-attention only)."""
    today = date_text(datetime.date.today(), "weekday")  # "Tuesday, 24 November 2026"
    return LiveConfig(weights="dates", source_text=today, seq_len=len(today), device=device), ("cross",)


def warm_home() -> None:
    """Home's run computed and cached at start-up (`ui.preload`): a server's first visit is usually Home's, and it
    then finds the model built and run (or waits for that computation already under way, not a second one)."""
    if "dates" in available():
        config, stacks = todays_date()
        _live(config, stacks, None, ())


@functools.lru_cache(maxsize=4)
def scaling(seed: int = 0):
    """The Dot-product lab's scaling experiment (0.5–0.8 s of NumPy on 2 cores): once a process, and the default's
    at start-up, in the background (`ui.preload`), so the lab's first visit does not wait for it."""
    return scaling_experiment(seed=seed)


def _or_stop(compute, *args):
    try:
        return compute(*args)
    except ValueError as error:
        st.error(as_text(error), icon=":material/warning:")  # "Received: …" may quote a typed line
    except Exception as error:  # the engine failed on valid-looking input: say so, keep the app alive
        st.error(as_text(f"The computation failed ({type(error).__name__}): {str(error)[:500]}"),
                 icon=":material/warning:")
    st.stop()


def show_status(result) -> None:
    """The status line for a live run: device, TensorFlow version, and how long the model ran (a page that
    draws no attention runs none: its masks and encodings need only the configuration)."""
    timing = (f"**model run** {result.compute_seconds * 1000:.1f} ms" if result.attention
              else "this page runs no model")
    _status(device=result.device_label, tensorflow=result.tf_version, timing=timing,
            memory=memory_text(result.device))


def memory_text(device: str) -> str:
    """``**GPU memory** 0.31 / 24.0 GB`` (in use by TensorFlow / on the device) for a GPU; "" for the CPU."""
    memory = device_memory(device)
    if memory is None:
        return ""
    used, total = memory
    return f"**GPU memory** {used / 2**30:.2f}" + (f" / {total / 2**30:.1f} GB" if total else " GB")


def _status(**parts) -> None:
    """Record the sidebar's status line (device, tensorflow, timing); parts not given keep their last value."""
    status = {**state.get(state.STATUS_PARTS, {}), **parts}
    state.put(state.STATUS_PARTS, status)
    text = " · ".join(filter(None, [
        f"**Device:** {status['device']}" if "device" in status else "",
        f"**TensorFlow** {status['tensorflow']}" if "tensorflow" in status else "",
        status.get("memory", ""),
        status.get("timing", ""),
    ]))
    state.put(state.LAST_STATUS, text)  # the sidebar draws it once the page has run (sidebar.draw_status)


def live(config, stacks=(), lines=None, notices=True, windows=()):
    """`run_live` for ``config``, cached; on bad input an error message and the page stops.

    ``stacks``: the attention maps the page draws (none by default: the model does not run);
    ``lines``: the lines they are computed for (None: every line); ``notices``: show the input's notices;
    ``windows``: the windows a block-wise run (N > 512) keeps exact, ``((first query, first key, size), …)``.
    """
    slot = st.container()  # always there, so that a notice coming or going moves nothing after it
    result = _live_result(config, tuple(stacks), None if lines is None else tuple(lines),
                          tuple(tuple(window) for window in windows))
    show_status(result)
    if notices:
        show_notices(slot, result.notices)
    if result.predictions:
        show_predictions(result.predictions)
    return result


def _live_result(config, stacks: tuple, lines, windows: tuple):
    """`run_live`'s result: on the engine thread when its estimated cost is light (`run_cost`), else after a press,
    in the background lane (`ui.heavy_runs`)."""
    if stacks:
        estimate = _or_stop(run_cost, config, stacks, lines)
        _or_stop(check_cost, estimate)  # before any cache: the limits hold for what was computed before they changed
        if estimate.heavy:
            return heavy_result("run_live", estimate, config, stacks=stacks, lines=lines, windows=windows)
    return _or_stop(_live, config, stacks, lines, windows)


def text_of(config):
    """``config``'s lines as the model reads them (tokens, ids, masks, the model's sizes) without any attention
    computed: `run_live` with no stacks, cached; nothing drawn (the page's `live` call draws the notices)."""
    return _or_stop(_live, config, (), None, ())


def every_line(config, stack: str):
    """``stack``'s weights ``(L, B, H, N_q, N_k)`` for every line of ``config`` (a download): `run_live`, cached,
    with no message drawn (the page has drawn them for its own run)."""
    return _live_result(config, (stack,), None, ()).attention[stack]


def show_notices(slot, notices) -> None:
    """``notices`` as one alert in ``slot`` (a container the page draws whether or not there are any).

    Why the slot: Streamlit matches the elements of a rerun with the page's by their place in their
    block. An alert that comes and goes in front of the charts (a line cut at one length and not at
    the next) shifts everything after it, and the browser throws those charts away and builds them
    again, each a first Plotly draw. One alert, not one per notice: the page jumps less.
    """
    if notices:
        slot.info("  \n".join(notices), icon=":material/info:")


def predictions_label(predictions) -> str:
    """What the predictions count, with its unit: whole answers for a sequence-to-sequence model; next tokens (as the
    Induction page counts them) and whole lines for a next-token model."""
    right, lines = sum(p["correct"] for p in predictions), len(predictions)
    line_text = f"{right} of {lines} line{'s' * (lines != 1)}"
    if not predictions[0].get("next_token", False):
        return f"Predictions of the trained model: {line_text} right (the whole answer)"
    tokens = sum(p["tokens_right"] for p in predictions)
    counted = sum(p["tokens_counted"] for p in predictions)
    share = f" ({percent(tokens / counted)})" if counted else ""
    return (f"Next-token predictions of the trained model: {tokens} of {counted} next tokens right{share} where the "
            f"rule has an answer · {line_text} right at every such token")


def show_predictions(predictions) -> None:
    """The trained model's answer for each source line next to the expected one."""
    next_token = predictions[0].get("next_token", False)
    with st.expander(predictions_label(predictions), expanded=True):
        if next_token:
            st.caption("After each token, the model's most probable next token; expected: the in-context rule (what "
                       "followed that token's latest earlier occurrence, · where it did not occur before). Right: the "
                       "two agree wherever the rule has an answer.")
        # what was predicted first, marked right (✓) or wrong (✗), and the long source last: on a phone the table
        # shows its first columns and the source scrolls
        st.dataframe(
            [{"line": i + 1, "prediction": f"{'✓' if p['correct'] else '✗'} {p['prediction']}",
              "expected": p["expected"],
              **({"next tokens right": f"{p['tokens_right']} of {p['tokens_counted']}"} if next_token else {}),
              "source": p["source"]} for i, p in enumerate(predictions)],
            hide_index=True,
        )


def line_count(config) -> int:
    """How many lines ``config`` has; on bad input the same message as `live` and the page stops."""
    return _or_stop(transformer.line_count, config)


def sequence_lengths(config) -> tuple[int, int]:
    """``(N_source, N_target)`` of ``config``; on bad input the same message as `live` and the page stops."""
    return _or_stop(transformer.sequence_lengths, config)


def walkthrough(config, stack, layer):
    """`attention_walkthrough` (cached); the status line gives its device and the time of that layer's run."""
    costly = _costly(config, stack, None)
    walk = heavy_result("attention_walkthrough", costly, config, stack, layer, pressed=True) if costly else \
        _or_stop(_walkthrough, config, stack, layer)
    _status(device=walk.device_label, tensorflow=walk.tf_version, memory=memory_text(walk.device),
            timing=f"**attention layer run** {walk.compute_seconds * 1000:.1f} ms")
    return walk


def keras_check(config, stack, layer, line) -> dict:
    """This engine against keras.layers.MultiHeadAttention on the live inputs of ``line`` (cached)."""
    costly = _costly(config, stack, (line,))
    if costly:
        return heavy_result("keras_difference", costly, config, stack, layer, pressed=True, line=line)
    return _or_stop(_keras_difference, config, stack, layer, line)
