"""The engine's calls for the pages, under the engine's own names (`transformer.service`): each through `door`,
which caches it, shows its status line where it has one, and on bad input shows a message and stops the page.

"Computing…" is the caches' own spinner, so only a computation shows it: a ``st.spinner``
around every call costs a timer thread and a message to the browser on each rerun, hits included.
"""

from __future__ import annotations

import contextlib
import datetime
import functools
import threading
from collections.abc import Callable

import numpy as np
import streamlit as st

from transformer import LiveConfig, service
from ui.heavy_runs import heavy_result
from ui.run_views import memory_text, record_status, show_notices, show_predictions, show_status
from ui.text import as_text

COMPUTING = "Computing…"
COST_REPEATS = 5  # each length timed five times: an exponent is read against the spread of the five fits


def door(max_entries: int | None = 8, spinner: str | bool = COMPUTING, status: Callable | None = None):
    """An engine call for the pages: cached by its arguments (``max_entries`` results; None: the engine keeps
    them), its ``status(result)`` parts on the sidebar's status line, and on bad input a message and the page stops
    (`_or_stop`)."""
    def wrap(compute):
        cached = compute if max_entries is None else \
            st.cache_resource(max_entries=max_entries, show_spinner=spinner)(compute)

        @functools.wraps(compute)
        def call(*args, **kwargs):
            result = _or_stop(cached, *args, **kwargs)
            if status is not None:
                record_status(**status(result))
            return result
        return call
    return wrap


_PRESSED = threading.local()  # .pressed: inside `pressed()`, the page's own button asked for what runs


@contextlib.contextmanager
def pressed():
    """Within it, a call priced past the light budget goes to the background lane without asking again: the
    page's own button (Score, Measure) was the press, and said the price beside it (`price_text`)."""
    before = getattr(_PRESSED, "pressed", False)
    _PRESSED.pressed = True
    try:
        yield
    finally:
        _PRESSED.pressed = before


def price_text(call_name: str, *args, **kwargs) -> str:
    """What the door's ``call_name`` would cost with these arguments, in words, and where it would run."""
    cost = _or_stop(getattr(service, call_name).price, *args, **kwargs)
    lane = "in the background lane" if cost.heavy else "at once"
    return f"{cost.what}: {cost.text()}, {lane}"


def _or_stop(compute, *args, **kwargs):
    """``compute(*args, **kwargs)`` with the engine thread shared: a call priced past the light budget runs in the
    background lane after a press (`ui.heavy_runs`), then ``compute`` again with that result; on bad input a
    message, and the page stops. A model whose loading is long is loaded first, after a press (`_loaded_first`)."""
    _loaded_first(args, kwargs)
    try:
        with service.shared_engine():
            return compute(*args, **kwargs)
    except service.NeedsLane as needs:
        result = heavy_result(needs.name, needs.cost, *needs.args, pressed=getattr(_PRESSED, "pressed", False),
                              memory=needs.memory, **needs.kwargs)
        needs.keep(result)
        with service.prepaid(needs, result):
            return _or_stop(compute, *args, **kwargs)
    except ValueError as error:
        st.error(as_text(error), icon=":material/warning:")  # "Received: …" may quote a typed line
    except Exception as error:  # the engine failed on valid-looking input: say so, keep the app alive
        st.error(as_text(f"The computation failed ({type(error).__name__}): {str(error)[:500]}"),
                 icon=":material/warning:")
    st.stop()


def _loaded_first(args: tuple, kwargs: dict) -> None:
    """Where a call names a model whose loading is long (a real language model's file) and this server has not
    loaded it: what loading costs, said, and a button that loads it once for every session; the page stops until
    then (no page's move waits for it unannounced, and it is not loaded again for each lane run)."""
    for config in (value for value in (*args, *kwargs.values()) if isinstance(value, LiveConfig)):
        if service.needs_loading(config.weights, config.device):
            cost = service.load_model.price(config.weights, config.device)
            st.info(f"Before it runs: {as_text(cost.what)}, {cost.duration()} and {cost.bytes / 2**20:,.0f} MB of "
                    "memory. Every session on this server then uses it; while it loads, the server's other sessions "
                    "wait.", icon=":material/download:")
            if st.button("Load it", key="load_model", type="primary", icon=":material/download:"):
                with st.spinner(f"{as_text(cost.what)[0].upper()}{as_text(cost.what)[1:]}…"):
                    service.load_model(config.weights, config.device)
                st.rerun()
            st.stop()


def _here_or_laned(estimate, here, call: str, /, *args, pressed: bool = False, **kwargs):
    """``here()`` on the engine thread where ``estimate`` (a `RunCost`) is light; where it is costly, ``call(*args,
    **kwargs)`` in the background lane, after a press (``pressed``: the page's own press asked already)."""
    if estimate.heavy:
        return heavy_result(call, estimate, *args, pressed=pressed, **kwargs)
    return here()


def _beside_the_run(config, stack: str, lines, light, call: str, /, *args, **kwargs):
    """A view of ``stack`` beside its page's run, priced as that run: ``light()`` (cached) where the run is light,
    else ``call(*args, **kwargs)`` in the lane under the page's press (a view computes at most what the run does,
    and a costly page stops before its views until pressed)."""
    estimate = _or_stop(service.run_cost, config, (stack,), lines)
    return _here_or_laned(estimate, light, call, *args, pressed=True, **kwargs)


# The page's own run, and the lines without attention

@st.cache_resource(max_entries=12, show_spinner=COMPUTING)
def _run_live(config, stacks, lines, windows):
    return service.run_live(config, stacks=stacks, lines=lines, windows=windows)


def run_live(config, *, stacks=(), lines=None, notices=True, windows=()):
    """`run_live` for ``config``, cached, with its status line, notices and predictions drawn; on bad input an error
    message and the page stops.

    ``stacks``: the attention maps the page draws (none by default: the model does not run);
    ``lines``: the lines they are computed for (None: every line); ``notices``: show the input's notices;
    ``windows``: the windows a block-wise run (N > 512) keeps exact, ``((first query, first key, size), …)``.
    """
    slot = st.container()  # always there, so that a notice coming or going moves nothing after it
    result = _run_live_result(config, tuple(stacks), None if lines is None else tuple(lines),
                              tuple(tuple(window) for window in windows))
    show_status(result)
    if notices:
        show_notices(slot, result.notices)
    if result.predictions:
        show_predictions(result.predictions)
    return result


def _run_live_result(config, stacks: tuple, lines, windows: tuple):
    """`run_live`'s result: on the engine thread when its estimated cost is light (`run_cost`), else after a press,
    in the background lane (`ui.heavy_runs`)."""
    here = functools.partial(_or_stop, _run_live, config, stacks, lines, windows)
    if not stacks:
        return here()
    estimate = _or_stop(service.run_cost, config, stacks, lines)
    _or_stop(service.check_cost, estimate)  # before any cache: the limits hold for what was computed before
    return _here_or_laned(estimate, here, "run_live", config, stacks=stacks, lines=lines, windows=windows)


@door(max_entries=12)
def read_lines(config):
    """``config``'s lines as the model reads them (tokens, ids, masks, the model's sizes) without any attention
    computed; nothing drawn (the page's `run_live` call draws the notices)."""
    return service.read_lines(config)


def every_line(config, stack: str):
    """``stack``'s weights ``(L, B, H, N_q, N_k)`` for every line of ``config`` (a download): `run_live`, cached,
    with no message drawn (the page has drawn them for its own run)."""
    return _run_live_result(config, (stack,), None, ()).attention[stack]


@door(max_entries=None)
def line_count(config) -> int:
    """How many lines ``config`` has."""
    return service.line_count(config)


@door(max_entries=None)
def sequence_lengths(config) -> tuple[int, int]:
    """``(N_source, N_target)`` of ``config``."""
    return service.sequence_lengths(config)


# One layer opened up, and the views of a head

def _layer_status(walk) -> dict:
    return dict(device=walk.device_label, tensorflow=walk.tf_version, memory=memory_text(walk.device),
                timing=f"**attention layer run** {walk.compute_seconds * 1000:.1f} ms")


@door(max_entries=4)  # every intermediate: ~150 MB at N = 512 with 8 heads
def _attention_walkthrough(config, stack, layer):
    return service.attention_walkthrough(config, stack, layer)


def attention_walkthrough(config, stack: str, layer: int):
    """One layer's intermediates (cached); the status line gives its device and the time of that layer's run."""
    walk = _beside_the_run(config, stack, None, lambda: _attention_walkthrough(config, stack, layer),
                           "attention_walkthrough", config, stack, layer)
    record_status(**_layer_status(walk))  # wherever it ran, and from the cache too
    return walk


@door(max_entries=12)
def _keras_difference(config, stack, layer, line):
    return service.keras_difference(config, stack, layer, line=line)


def keras_difference(config, stack: str, layer: int, *, line: int) -> dict:
    """This engine against keras.layers.MultiHeadAttention on the live inputs of ``line`` (cached)."""
    return _beside_the_run(config, stack, (line,), lambda: _keras_difference(config, stack, layer, line),
                           "keras_difference", config, stack, layer, line=line)


@door(max_entries=8)
def _value_norms(config, stack, line):
    return service.value_norms(config, stacks=(stack,), lines=(line,))


def value_norms(config, stack: str, *, line: int):
    """``(L, H, N_q, N_k)`` value-weighted norms ``‖α·f(x)‖`` of ``stack`` on ``line`` (cached)."""
    return _beside_the_run(config, stack, (line,), lambda: _value_norms(config, stack, line), "value_norms", config,
                           stacks=(stack,), lines=(line,))[stack][:, 0]


@door(max_entries=8)
def _score_terms(config, stack, layer, head, line, query):
    return service.score_terms(config, stack, layer, head, line, (query,))


def score_terms(config, stack: str, layer: int, head: int, *, line: int, query: int):
    """`transformer.score_terms` of one query of ``line`` (cached): its score for every key, split by parts."""
    return _beside_the_run(config, stack, (line,), lambda: _score_terms(config, stack, layer, head, line, query),
                           "score_terms", config, stack, layer, head, line, (query,))


@st.cache_data(max_entries=16, show_spinner=COMPUTING)
def attention_flow(weights, query: int):
    """`attention_flow` of ``query`` through ``weights (L, H, N, N)`` (cached on the weights): ``(N,)``."""
    return service.attention_flow(weights, queries=[query])[0]


# The pages' measures

@door(max_entries=16, status=lambda run: dict(device=run.device_label, timing=""))
def decode(config, text: str, *, sample: bool, temperature: float, top_k: int, top_p: float, seed: int):
    """A model's decoding of ``text`` (cached); the status line gives the device."""
    return service.decode(config, text, sample=sample, temperature=temperature, top_k=top_k, top_p=top_p, seed=seed)


@door(max_entries=8)
def head_roles(config, stack: str, pattern: str | None, pattern_size: int):
    """Every head's role scores over many lines (cached)."""
    return service.head_roles(config, stack, pattern, pattern_size)


@door(max_entries=8)
def query_key_space(config, stack: str, layer: int, head: int):
    """One head's queries and keys in a plane (cached)."""
    return service.query_key_space(config, stack, layer, head)


@door(max_entries=8)
def induction_study(seed: int, count: int, ablated: str, device: str):
    """The shipped induction model's study on fresh lines (cached)."""
    return service.induction_study(seed=seed, count=count, ablated=ablated, weights="induction", device=device)


@door(max_entries=None)
def faithfulness(name: str, count: int, device: str):
    """Which explanation of a trained model is right (kept by the engine), on examples of seed 0."""
    return service.faithfulness(name, count=count, seed=0, device=device)


@door(max_entries=16)
def example_maps(name: str, source_text: str, count: int, device: str):
    """Every method's map of one source line (cached), the methods fitted on ``count`` examples of seed 0."""
    return service.example_maps(name, source_text, count=count, seed=0, device=device)


@door(max_entries=None)
def measure_ablation(name: str, ablate: tuple, count: int, kind: str, device: str) -> tuple[float, float]:
    """``(loss, exact accuracy)`` of a trained model with ``ablate`` ablated (remembered by the engine), on examples
    of seed 0."""
    return service.measure_ablation(name, ablate, count=count, kind=kind, seed=0, device=device)


@door(max_entries=None)
def head_importance(name: str, count: int, kind: str, device: str):
    """Every head's ablation measured (once each is: `measure_ablation`), on examples of seed 0."""
    return service.head_importance(name, count=count, kind=kind, seed=0, device=device)


@door(max_entries=8)
def position_views(length: int, d_k: int, heads: int, rope_base: float):
    """RoPE's angles and rotated dot products (its base: the model's), ALiBi's biases (cached)."""
    return service.position_views(length, d_k, heads, rope_base=rope_base)


@door(max_entries=4)
def timeline_of(name: str):
    """The attention-over-training snapshots a model trained here was kept with (cached)."""
    return service.timeline_of(name)


# Images

@door(max_entries=None)
def image_task(name: str) -> str:
    """The task an image model learned."""
    return service.image_task(name)


@door(max_entries=None)
def example_image(name: str, pick: int):
    """``(image (8, 8), label)``: a fresh match image of seed ``pick`` or digits' test image ``pick``."""
    return service.example_image(name, pick)


@door(max_entries=64, spinner=False)
def _read_image(name: str, pixels: bytes, device: str):
    return service.read_image(name, np.frombuffer(pixels, np.float32).reshape(8, 8), device)


def read_image(name: str, image, device: str):
    """One image read by an image model (cached by its pixels)."""
    return _read_image(name, np.asarray(image, np.float32).tobytes(), device)


# The Cost page

@door(max_entries=8, spinner="Measuring one attention layer at every length…")
def _attention_cost(d_model: int, heads: int, device: str, longest: int):
    return service.attention_cost(d_model, heads, device, tuple(n for n in service.COST_LENGTHS if n <= longest),
                                  repeats=COST_REPEATS)


_MEASURED: set = set()  # the cost measurements made in this process (any session's)


def attention_cost(d_model: int, heads: int, device: str, longest: int):
    """One attention layer's time and memory at every length up to ``longest`` (cached per model size, device and
    longest N): on the engine thread when it is light, else in the background lane (the Measure button was its
    press)."""
    lengths = tuple(n for n in service.COST_LENGTHS if n <= longest)
    estimate = service.measure_cost(d_model, heads, lengths, COST_REPEATS)
    series = _here_or_laned(estimate, lambda: _attention_cost(d_model, heads, device, longest), "attention_cost",
                            d_model, heads, device, lengths, pressed=True, repeats=COST_REPEATS)
    _MEASURED.add((d_model, heads, device, longest))
    return series


def cost_measured(d_model: int, heads: int, device: str, longest: int) -> bool:
    """Whether those measurements were made already (a page then draws them without a click)."""
    return (d_model, heads, device, longest) in _MEASURED


# Start-up

def todays_date(device: str = "auto"):
    """Home's picture: the dates model reading today's date, as Home runs it (cross-attention only)."""
    today = service.date_text(datetime.date.today(), "weekday")  # "Tuesday, 24 November 2026"
    return LiveConfig(weights="dates", source_text=today, seq_len=len(today), device=device), ("cross",)


def warm_home() -> None:
    """Home's run computed and cached at start-up (`ui.preload`): a server's first visit is usually Home's, and it
    then finds the model built and run (or waits for that computation already under way, not a second one)."""
    if "dates" in service.available():
        config, stacks = todays_date()
        _run_live(config, stacks, None, ())


@functools.lru_cache(maxsize=4)
def scaling_experiment(seed: int = 0):
    """The Dot-product lab's scaling experiment (0.5–0.8 s of NumPy on 2 cores): once a process, and the default's
    at start-up, in the background (`ui.preload`), so the lab's first visit does not wait for it."""
    return service.scaling_experiment(seed=seed)


@door(max_entries=16)
def patching_line(name: str, seed: int, device: str) -> str:
    """A fresh clean line of ``name``'s task drawn from ``seed`` (cached)."""
    return service.patching_line(name, seed, device)


@door(max_entries=16)
def patching_study(request):
    """One patching map (a `PatchRequest`) and the two runs it starts from (cached; the engine remembers it too)."""
    return service.patching_study(request)


@door(max_entries=8)
def real_patch_map(request):
    """A real language model's patching map of two typed lines (cached; a long run: the background lane)."""
    return service.real_patch_map(request)


@door(max_entries=16)
def real_patch_cell(request, cell: tuple, layer: int):
    """One cell of a real model's map, its three runs (cached)."""
    return service.real_patch_cell(request, cell, layer)


@door(max_entries=16)
def patching_cell(request, row: int, column: int, view_stack: str, view_layer: int):
    """The clean, patched and corrupted runs of one cell of ``request``'s map."""
    return service.patching_cell(request, row, column, view_stack, view_layer)
