"""Performance benchmark: prints one table and writes it to BENCHMARKS.md.

    python bench/benchmark.py [--quick] [--write]

Every figure is measured in the same run as its reference:
  1. slider → redrawn chart in headless Chromium against `streamlit run` (Attention and
     Masks pages, default config and N = 512 with 8 heads; the head view at N = 64 and rollout at
     N = 512), against a trivial one-chart app;
  2. compute: this engine's multi-head attention and whole forward pass against
     keras.layers.MultiHeadAttention and a large matmul's FLOP/s; building a new architecture;
  3. payload: bytes of each chart sent to the browser;
  4. retraces and model builds over 100 random moves; block-wise attention at N = 4096 (peak memory
     in a fresh process, agreement with full attention);
  5. memory over 300 reruns, and cold start from `make run` to the first chart.
"""

from __future__ import annotations

import argparse
import collections
import os
import random
import subprocess
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "bench")]
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
from moves import CHART, move_control  # noqa: E402
from report import ROWS, percentile, process_rss_mb, row, steal_note, stolen_seconds, write_section  # noqa: E402

# ----------------------------------------------------------------- 1. slider → chart

MOVES_NOTE = ("Slider moves: sequence length and pad symbols take a new value every time (the engine "
              "computes each one); heads and d_model go back and forth between two built models; each page "
              "is looked at for 2.5 s after it loads, before the first move. The pages take turns (a few moves "
              "each, four rounds), so a slower spell of the machine falls on the floor and the app alike.")

ROUNDS = 4  # the pages take turns this many times; a default page moves one of its four controls a round


@dataclass
class _Lane:
    """One page the slider benchmark moves: its row, its moves and the latencies measured so far."""
    measure: str
    url: str
    kinds: tuple[str, ...] = ("seq_len",)
    look_first: bool = False  # the app's pages: a pause after loading, as a person would make
    target: str = ""
    times: list = field(default_factory=list)
    made: collections.Counter = field(default_factory=collections.Counter)  # moves made so far, by kind
    page: object = None


def _open_lane(browser, lane: _Lane) -> None:
    from browser_support import wait_idle

    lane.page = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
    lane.page.goto(lane.url)
    wait_idle(lane.page)
    lane.page.wait_for_function(f"() => {CHART} && {CHART}._fullData", timeout=120_000)
    if lane.look_first:
        # A person looks at a page before moving a slider; the engine uses such a pause (1 s without
        # requests) to trace the new page's graphs. Moves right after a load would run eagerly.
        lane.page.wait_for_timeout(2_500)


def _lanes(floor_url: str, url: str, count: int) -> list[_Lane]:
    lanes = [_Lane("trivial one-chart page, st.plotly_chart (framework floor)", f"{floor_url}/?chart=plotly_chart"),
             _Lane("trivial one-chart page, this app's chart component (framework floor)",
                   f"{floor_url}/?chart=component")]
    for page_name, seed in (("attention", 0), ("masks", 1)):  # another seed: masks recompute too
        lanes.append(_Lane(f"{page_name}, default ({count // ROUNDS * ROUNDS} moves: seq_len, heads, d_model, pads)",
                           f"{url}/{page_name}?seed={seed}", kinds=("seq_len", "heads", "d_model", "pads"),
                           look_first=True, target="p50 ≤ 300 ms and ≤ 2× floor; p90 ≤ 500 ms"))
        # At N = 512 the pad symbols move: the sequence-length slider's stops there are 32 apart
        # (ui.state.SEQ_LEN_CHOICES), and a new set of pads is a new computation at the same length.
        lanes.append(_Lane(f"{page_name}, N=512, 8 heads ({count} moves: pads)",
                           f"{url}/{page_name}?seq_len=512&heads=8&d_model=64&seed={seed}", kinds=("pads",),
                           look_first=True, target="p50 ≤ 800 ms"))
    text = "+".join(str(i % 10) for i in range(64))  # 64 tokens: no padding
    lanes.append(_Lane(f"attention, head view N=64 ({count // ROUNDS * ROUNDS} moves: focus, head toggle)",
                       f"{url}/attention?seq_len=64&view=Head+view&src={text}&tgt=1+2+3&seed=2",
                       kinds=("focus", "head_toggle", "focus", "head_toggle"), look_first=True,
                       target="p50 ≤ 300 ms and ≤ 2× floor; p90 ≤ 500 ms"))
    lanes.append(_Lane(f"attention, rollout N=512, 8 heads ({count} moves: pads)",
                       f"{url}/attention?seq_len=512&heads=8&d_model=64&view=Rollout&seed=3", kinds=("pads",),
                       look_first=True, target="p50 ≤ 800 ms"))
    long_text = "+".join(str(i % 10) for i in range(4096))  # 4096 tokens: the pads fall inside the line
    lanes.append(_Lane(f"attention, N=4096, 8 heads, 2 layers, block-wise ({count} moves: pads)",
                       f"{url}/attention?seq_len=4096&heads=8&d_model=64&layers=2&src={long_text}&tgt=1+2+3&seed=4",
                       kinds=("pads",), look_first=True, target="p50 ≤ 1.5 s"))
    return lanes


def _round_moves(lane: _Lane, count: int, round_index: int) -> tuple[str, int]:
    """The kind and number of moves ``lane`` makes in round ``round_index``: a default page moves one control a
    round (count // 4 moves), the others share ``count`` moves between the rounds."""
    if len(lane.kinds) == ROUNDS:
        return lane.kinds[round_index], count // ROUNDS
    return lane.kinds[0], count // ROUNDS + (round_index < count % ROUNDS)


def slider_latency(quick: bool):
    from browser_support import CHROMIUM, CHROMIUM_ARGS, streamlit_server
    from playwright.sync_api import sync_playwright

    count = 8 if quick else 30
    with (sync_playwright() as playwright, streamlit_server("bench/trivial_app.py") as floor_url,
          streamlit_server() as url):
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        lanes = _lanes(floor_url, url, count)
        for lane in lanes:
            _open_lane(browser, lane)
        for round_index in range(ROUNDS):
            for lane in lanes:
                kind, moves = _round_moves(lane, count, round_index)
                lane.page.bring_to_front()
                lane.times += move_control(lane.page, kind, moves, first=lane.made[kind])
                lane.made[kind] += moves
        browser.close()
    floor, own_floor = (percentile(lane.times, 50) for lane in lanes[:2])
    for lane in lanes:
        p50, p90 = percentile(lane.times, 50), percentile(lane.times, 90)
        figure = f"{p50 * 1e3:.0f} / {p90 * 1e3:.0f}"
        if lane.target:
            figure += f" ({p50 / floor:.1f}× floor; {p50 / own_floor:.1f}× the component's floor)"
        row("slider", f"{lane.measure} p50 / p90 ms", figure, lane.target)


# ----------------------------------------------------------------- 2. compute


def _timed(*fns, repeats):
    """Median seconds of each of ``fns``, timed in turns (one call of each per round, the order
    rotating), so that a burst of load on a noisy machine falls on all of them, not on one."""
    for fn in fns:
        fn()
        fn()
    times = [[] for _ in fns]
    for round_ in range(repeats):
        for index in np.roll(np.arange(len(fns)), round_):
            started = time.perf_counter()
            fns[index]()
            times[index].append(time.perf_counter() - started)
    return [float(np.median(each)) for each in times]


def compute(quick: bool):
    import keras
    import tensorflow as tf

    from transformer import LiveConfig, MultiHeadAttention, run_live
    from transformer.analysis.reference import copy_to_keras
    from transformer.live.engine_thread import on_engine_thread
    from transformer.live.model_cache import MODELS

    repeats = 5 if quick else 20
    size = 2048
    a = tf.random.normal((size, size))
    matmul = tf.function(lambda: tf.matmul(a, a))
    run_matmul = lambda: matmul().numpy()  # noqa: E731
    peak = 2 * size**3 / _timed(run_matmul, repeats=repeats)[0]
    row("compute", f"matmul {size}×{size} (practical peak)", f"{peak / 1e9:.1f} GFLOP/s")
    d_model, heads = 512, 8
    ours = MultiHeadAttention(d_model, heads)
    for n in (64, 256, 512):
        x = tf.random.normal((1, n, d_model))
        ours(x, x, x)
        theirs = copy_to_keras(ours)
        ours_fn = tf.function(lambda q: ours(q, q, q)[0])
        theirs_fn = tf.function(lambda q: theirs(q, q))
        t_ours, t_keras, t_matmul = _timed(lambda: ours_fn(x).numpy(), lambda: theirs_fn(x).numpy(), run_matmul,
                                           repeats=repeats)
        flops = 4 * 2 * n * d_model**2 + 2 * 2 * n * n * d_model
        row("compute", f"multi-head attention B=1 N={n} d_model=512 H=8: ours / Keras ms",
            f"{t_ours * 1e3:.2f} / {t_keras * 1e3:.2f} ({t_ours / t_keras:.2f}×)",
            "≤ 1.1× Keras" if n == 512 else "")
        if n == 512:  # against the peak measured in the same rounds
            row("compute", "  … share of the matmul peak at N=512 (peak in the same rounds)",
                f"{flops / t_ours / (2 * size**3 / t_matmul):.0%}", "≥ 50%")
        config = LiveConfig(d_model=d_model, num_heads=heads, d_ff=2048, num_layers=2, seq_len=n,
                            source_text="1 2 3", target_text="1 2 3")
        run_live(config)  # builds the model, which runs eagerly until the idle engine traces it a second later:
        on_engine_thread(MODELS.trace_pending)()  # trace now, so the timed runs are what a user's moves get
        forward = np.median([run_live(config).compute_seconds for _ in range(repeats)])
        row("compute", f"whole forward pass (2+2 layers, d_ff 2048) N={n}", f"{forward * 1e3:.1f} ms")
    del keras
    token_views(repeats)
    new_architectures(8 if quick else 24)
    decoding(3 if quick else 10)
    head_roles(3 if quick else 10)


def token_views(repeats: int):
    """The token-level views' own work on the server: rollout's products and the head view's figure."""
    from transformer.analysis.measures import attention_rollout
    from ui.chart import chart_payload
    from viz.head_view import head_view

    rng = np.random.default_rng(0)
    weights = rng.random((6, 8, 512, 512)).astype(np.float32)
    weights /= weights.sum(-1, keepdims=True)
    (rollout,) = _timed(lambda: attention_rollout(weights), repeats=repeats)
    row("compute", "attention rollout N=512, 6 layers × 8 heads", f"{rollout * 1e3:.1f} ms")
    small = weights[0, :, :64, :64] / weights[0, :, :64, :64].sum(-1, keepdims=True)  # (8, 64, 64)
    tokens = [str(i % 10) for i in range(64)]
    build = lambda: chart_payload(head_view(small, np.ones((64, 64), bool), tokens, tokens))  # noqa: E731
    (seconds,) = _timed(build, repeats=repeats)
    row("compute", "head view N=64, 8 heads, every line: figure and its JSON (ms / KB)",
        f"{seconds * 1e3:.1f} / {len(build()) / 1024:,.0f}", "≤ 1 MB")


def decoding(repeats: int):
    """What the Decode page's engine call costs: every step of a line by the whole model (traced), then the line
    through the cache once."""
    from transformer import LiveConfig
    from transformer.decoding import decode
    from transformer.tasks import get_task

    gpt = LiveConfig(architecture="decoder-only", norm="pre")
    for name, config, source in (
            ("dates", LiveConfig(weights="dates"), "Wednesday, 30 September 2026"),
            ("translate", LiveConfig(weights="translate"),
             "every sad cat sees this young child often under the tall river"),
            ("decoder-only prompt (random, pre-norm)", gpt, "1 2 3 4 5"),
            ("induction prompt", LiveConfig(weights="induction", architecture="decoder-only", norm="pre",
                                            positions="learned"), get_task("induction").prompt)):
        decode(config, source)  # loads the model and traces its functions
        seconds = [time.perf_counter()]
        for _ in range(repeats):
            run = decode(config, source)
            seconds.append(time.perf_counter())
        row("compute", f"Decode page: every step of a {name} line ({len(run.steps)} steps, whole model and cache)",
            f"{np.median(np.diff(seconds)) * 1e3:.0f} ms (cache gap {run.cache_gap:.0e})",
            "≤ 300 ms" if name == "dates" else "")


def head_roles(repeats: int):
    """Scoring every head's roles, distance and entropy (NumPy) over a batch of repeated random lines."""
    from transformer.analysis.heads import batch_role_scores, repeated_random_tokens

    rng = np.random.default_rng(0)
    ids = repeated_random_tokens(rng, 16, 32, 500)  # (16, 64)
    logits = rng.normal(0, 1, (2, 16, 4, 64, 64))
    weights = np.exp(np.where(np.tril(np.ones((64, 64), bool)), logits, -np.inf))
    weights /= weights.sum(-1, keepdims=True)  # (L=2, B=16, H=4, 64, 64), causal
    (seconds,) = _timed(lambda: batch_role_scores(weights, ids), repeats=repeats)
    row("compute", "head roles: 5 roles, distance and entropy of 2 layers × 4 heads over 16 lines of N=64",
        f"{seconds * 1e3:.0f} ms")
    head_page(repeats)
    importance_map()
    your_model(repeats)


def head_page(repeats: int):
    """The Heads page's engine call at its defaults: the model over 16 lines of repeated tokens, every head scored
    (a new seed each time, so nothing is remembered; the model is built and traced first)."""
    from transformer import LiveConfig
    from transformer.live.engine_thread import on_engine_thread
    from transformer.live.head_roles import head_roles, repeated_lines
    from transformer.live.model_cache import MODELS

    def config(seed):
        text = repeated_lines(16, 10, seed)
        return LiveConfig(source_text=text, target_text=text, seq_len=20, seed=seed)

    head_roles(config(0), "encoder")
    on_engine_thread(MODELS.trace_pending)()
    seeds = iter(range(1, 10 * repeats + 2))
    (seconds,) = _timed(lambda: head_roles(config(next(seeds)), "encoder", pattern="window"), repeats=repeats)
    row("compute", "Heads page: encoder roles + a window pattern, default model, 16 repeated lines of N=20",
        f"{seconds * 1e3:.0f} ms")


def your_model(repeats: int):
    """A text move on the Attention page with a small keras-hub model loaded (a GPT-2 of 2 layers × 4 heads,
    d 64, built here: nothing downloads): the engine's run of two new lines, against the lab's default model."""
    import tempfile

    import keras_hub

    from transformer import LiveConfig, run_live
    from transformer.external.registry import PRESETS_DIR_ENV

    folder = Path(tempfile.mkdtemp())
    vocabulary = {"<|endoftext|>": 0, **{chr(97 + i): i + 1 for i in range(26)}, "Ġ": 27,
                  **{f"Ġ{chr(97 + i)}": 28 + i for i in range(26)}}
    keras_hub.models.GPT2Backbone(vocabulary_size=len(vocabulary), num_layers=2, num_heads=4, hidden_dim=64,
                                  intermediate_dim=256, max_sequence_length=64).save_to_preset(folder / "small_gpt2")
    merges = [f"Ġ {chr(97 + i)}" for i in range(26)]
    keras_hub.models.GPT2Tokenizer(vocabulary=vocabulary, merges=merges).save_to_preset(folder / "small_gpt2")
    os.environ[PRESETS_DIR_ENV] = str(folder)
    texts = iter([f"{' '.join(chr(97 + (i + j) % 26) for j in range(12))}\n{chr(97 + i % 26)} b c d"
                  for i in range(10 * repeats + 4)])
    ours = iter([f"{i} 2 3 4 5 6 7\n{i} 2 3" for i in range(10 * repeats + 4)])
    external = lambda: run_live(LiveConfig(weights="hub:small_gpt2", architecture="decoder-only",  # noqa: E731
                                           source_text=next(texts), seq_len=16), stacks=("decoder",), lines=(0,))
    lab = lambda: run_live(LiveConfig(source_text=next(ours), target_text=next(ours), seq_len=16),  # noqa: E731
                           stacks=("decoder",), lines=(0,))
    t_external, t_lab = _timed(external, lab, repeats=repeats)
    row("compute", "Your model: a text move on the Attention page, a small GPT-2 preset (2 layers × 4 heads, d 64) / "
        "the lab's default model", f"{t_external * 1e3:.0f} / {t_lab * 1e3:.0f} ms ({t_external / t_lab:.1f}×)")


def importance_map():
    """The Heads page's importance map at its default size: every head of reverse and of dates ablated in turn on 200
    examples (loss and greedy decoding), cold (each head measured once; the traced functions made on the way)."""
    from transformer.analysis.importance import head_importance

    for name in ("reverse", "dates"):
        started = time.perf_counter()
        importance = head_importance(name, 200, seed=int(time.time()))  # a fresh draw: nothing remembered
        row("compute", f"importance map: every head of {name} ablated in turn, 200 examples (24 heads + the "
            f"model)", f"{(time.perf_counter() - started):.1f} s", "a progress bar while it runs")
        del importance


def new_architectures(count: int):
    """What a move of the heads, d_model, d_ff or layers slider to an architecture no one has used costs the
    engine: build the model, draw its weights, run it eagerly (the Attention page's default: encoder, one line)."""
    from transformer import LiveConfig, ModelCache, run_live

    rng, cache, seconds = random.Random(4), ModelCache(), []
    run_live(LiveConfig(), cache, stacks=("encoder",), lines=(0,))  # warm-up: TensorFlow's first ops
    for _ in range(count):
        d_model = rng.choice((32, 48, 64, 96, 128))
        config = LiveConfig(d_model=d_model, num_heads=rng.choice([h for h in (1, 2, 4, 8) if d_model % h == 0]),
                            d_ff=rng.choice((64, 128, 256, 512)), num_layers=rng.randint(1, 4))
        started = time.perf_counter()
        run_live(config, cache, stacks=("encoder",), lines=(0,))
        seconds.append(time.perf_counter() - started)
    row("compute", f"a new architecture: build, weights, first (eager) run; {count} of d_model 32–128, 1–4 layers "
        "p50 / p90", f"{np.median(seconds) * 1e3:.0f} / {np.percentile(seconds, 90) * 1e3:.0f} ms")


def new_seed_on_the_largest_model(repeats: int = 3):
    """What a move of the seed costs on the largest model the sliders allow: every weight redrawn in place.

    Run after the memory part: this process's RSS stays ~900 MB higher once the model has been built (even
    after a full garbage collection), which would be in the memory part's baseline."""
    from transformer.core.weight_init import seed_weights
    from transformer.live.config import MAX_D_FF, MAX_D_MODEL, MAX_LAYERS, LiveConfig
    from transformer.live.model_cache import ModelCache

    cache = ModelCache(size=1)
    largest = LiveConfig(d_model=MAX_D_MODEL, num_heads=8, d_ff=MAX_D_FF, num_layers=MAX_LAYERS, device="cpu")
    model = cache.get(largest.model_key).model  # the key as the engine makes it (it grew norm and architecture)
    seconds = []
    for seed in range(1, repeats + 1):
        started = time.perf_counter()
        seed_weights(model, seed)
        seconds.append(time.perf_counter() - started)
    weights_mb = cache.weight_bytes() / 2**20
    row("compute", f"a new seed on the largest model (d_model {MAX_D_MODEL}, d_ff {MAX_D_FF}, {MAX_LAYERS} layers, "
        f"{weights_mb:.0f} MB of weights): every weight redrawn, median of {repeats}",
        f"{np.median(seconds) * 1e3:.0f} ms")


# ----------------------------------------------------------------- 3. payload


def payload():
    """Bytes of every chart each page sends (its Plotly JSON), at the default and the largest config
    (with the Attention page's model view and full-resolution head open)."""
    from chart_support import chart_payloads
    from streamlit.testing.v1 import AppTest

    pages = ("masks", "attention", "positional_encoding", "dot_product_lab", "shapes")
    for label, query in (("default", {"view": "Model view"}),
                         ("N=512, 8 heads", {"seq_len": "512", "heads": "8", "view": "Model view", "full_res": "1",
                                             "src": " ".join(str(i % 10) for i in range(512)), "tgt": "1 2 3"})):
        for page in pages:
            at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300)
            for key, value in query.items():
                at.query_params[key] = value
            at.switch_page(f"app_pages/{page}.py").run()
            sizes = [len(payload) for payload in chart_payloads(at)]
            largest = max(sizes)
            row("payload", f"{label}: {page} ({len(sizes)} charts) largest / all", f"{largest / 1024:,.0f} / "
                f"{sum(sizes) / 1024:,.0f} KB", "≤ 1 MB each" if largest <= 2**20 else "> 1 MB")


# ----------------------------------------------------------------- 4. retraces


def retraces():
    from transformer import LiveConfig, ModelCache, keras_difference, run_live
    from transformer.live.engine_thread import on_engine_thread

    cache, rng = ModelCache(), random.Random(1)
    base = LiveConfig()
    run_live(base, cache)
    keras_difference(base, "encoder", 0, cache)  # the Attention page's Keras check has a graph of its own
    on_engine_thread(cache.trace_pending)()  # what the engine does once idle
    for _ in range(100):
        words = " ".join(rng.choice(["a", "b", "c", "0", "<pad>"]) for _ in range(rng.randint(1, 20)))
        move = replace(base, seq_len=rng.randint(1, 64), seed=rng.randint(0, 3),
                       pad_symbols=rng.choice([("0",), ("0", "<pad>"), ("<pad>",)]),
                       source_text=f"{words}\n1 2\n3", target_text="1\n2 3\n4")
        result = run_live(move, cache)
        keras_difference(move, "encoder", 0, cache)
    functions = cache.get(base.model_key).functions
    check_traces = sum(function.traces for function in functions.values())
    row("traces", "retraces (forward pass, Keras check) / model builds over 100 moves of length, pads, text, seed",
        f"{result.traces - 1}, {check_traces - len(functions)} / {cache.builds - 1}", "0 / 0 after warm-up")


# ----------------------------------------------------------------- 5. memory, cold start


def memory(quick: bool, warm_up: int = 50, reruns: int | None = None):
    """The server's RSS over ``reruns`` sequence-length moves on the Attention page, after ``warm_up`` of them."""
    from streamlit.testing.v1 import AppTest

    from ui.state import SEQ_LEN_CHOICES

    lengths = [length for length in SEQ_LEN_CHOICES if 2 <= length <= 40]  # the slider's stops
    reruns = reruns or (60 if quick else 300)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.switch_page("app_pages/attention.py").run()
    rng = random.Random(2)
    for index in range(reruns + warm_up):
        if index == warm_up:
            warm = process_rss_mb()
        at.sidebar.select_slider(key="seq_len").set_value(rng.choice(lengths)).run()
        assert not at.exception, at.exception
    end = process_rss_mb()
    row("memory", f"RSS after {warm_up} warm-up reruns → after {reruns} more", f"{warm:.0f} → {end:.0f} MB "
        f"({(end - warm) / warm:+.1%})", "≤ +5%")


def cold_start(quick: bool):
    """Median of three cold starts (one with --quick): on a noisy 2-core machine one start varies by seconds."""
    seconds = sorted(_one_cold_start() for _ in range(1 if quick else 3))
    spread = f" (median of {len(seconds)}: {seconds[0]:.1f}–{seconds[-1]:.1f} s)" if len(seconds) > 1 else ""
    row("startup", "cold start: `make run` → first chart drawn", f"{seconds[len(seconds) // 2]:.1f} s{spread}",
        "≤ 8 s")


def _one_cold_start() -> float:
    """Seconds from `make run` to the Masks page's first chart in a newly launched Chromium."""
    from browser_support import CHROMIUM, CHROMIUM_ARGS, free_port
    from playwright.sync_api import sync_playwright

    port = free_port()
    started = time.perf_counter()
    process = subprocess.Popen(["make", "run", f"PORT={port}"], cwd=ROOT, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            page = browser.new_page()
            while True:
                try:
                    page.goto(f"http://127.0.0.1:{port}/masks", timeout=2_000)
                    break
                except Exception:
                    time.sleep(0.1)
            page.wait_for_function(f"() => {CHART} && {CHART}._fullData", timeout=120_000)
            seconds = time.perf_counter() - started
            browser.close()
    finally:
        os.killpg(process.pid, 15)
        process.wait()
    return seconds


def gpu(quick: bool):
    """On a GPU machine: multi-head attention at N 512 … 4096 and a whole forward pass on the GPU against the
    CPU, each row naming its device. Without a GPU, one row says that they were not measured, and why."""
    import tensorflow as tf

    from transformer import LiveConfig, ModelCache, MultiHeadAttention, device_label, run_live
    from transformer.live.device import driver_gpus, visible_gpus
    from transformer.live.engine_thread import on_engine_thread

    if not visible_gpus():
        why = ("the NVIDIA driver lists a GPU that TensorFlow does not see (make run GPU=1)" if driver_gpus()
               else "no GPU on this machine")
        row("gpu", "GPU rows: attention N 512–4096, forward pass, slider move",
            f"not measured: {why} (one H100's: the GPU section below)")
        return
    label, repeats, d_model, heads = device_label("/GPU:0"), 5 if quick else 20, 512, 8
    for n in (512, 1024, 2048, 4096):
        seconds = {}
        for device in ("/GPU:0", "/CPU:0"):
            with tf.device(device):
                layer, x = MultiHeadAttention(d_model, heads), tf.random.normal((1, n, d_model))
                layer(x, x, x)
                attend = tf.function(lambda q: layer(q, q, q)[0])
                seconds[device] = _timed(lambda: attend(x).numpy(), repeats=repeats)[0]
        on_gpu, on_cpu = seconds["/GPU:0"], seconds["/CPU:0"]
        row("gpu", f"multi-head attention B=1 N={n} d_model=512 H=8: {label} / CPU ms",
            f"{on_gpu * 1e3:.2f} / {on_cpu * 1e3:.2f} ({on_cpu / on_gpu:.1f}×)")
    for choice in ("auto", "cpu"):
        config = LiveConfig(d_model=d_model, num_heads=heads, d_ff=2048, num_layers=2, seq_len=512, device=choice)
        cache = ModelCache()
        run_live(config, cache)
        on_engine_thread(cache.trace_pending)()
        forward = np.median([run_live(config, cache).compute_seconds for _ in range(repeats)])
        row("gpu", f"whole forward pass (2+2 layers, d_ff 2048) N=512 on {device_label(config.model_key[-1])}",
            f"{forward * 1e3:.1f} ms")
    row("gpu", "slider moves", f"the slider rows above ran on {label}")


# ----------------------------------------------------------------- 4b. long sequences


def long_sequences(quick: bool):
    """Block-wise attention: its peak memory at N = 4096 (a fresh process), its agreement with full attention
    where both fit, and the engine's encoder run at N = 4096."""
    import tensorflow as tf

    from transformer.core.masks import padding_mask
    from transformer.core.model import Transformer
    from transformer.live.blockwise import blockwise_attention, power_of_two_block
    from viz.pooling import max_pool

    peaks = {}
    for n, mode in ((4096, "blockwise"), (2048, "full")):
        done = subprocess.run([sys.executable, str(ROOT / "bench" / "peak_memory.py"), str(n), mode],
                              capture_output=True, text=True, env={**os.environ, "MALLOC_MMAP_THRESHOLD_": "65536"})
        peaks[mode] = int(done.stdout.split()[-1]) / 2**20 if done.returncode == 0 else float("nan")
    row("long", "peak memory of an encoder run (8 heads, 2 layers), fresh process: block-wise N=4096 / full "
        "N=2048", f"{peaks['blockwise']:.0f} / {peaks['full']:.0f} MB", "≤ 256 MB block-wise")
    model = Transformer(1000, 1000, d_model=64, num_heads=8, d_ff=256, num_encoder_layers=2, num_decoder_layers=2,
                        dropout=0.0, max_len=4096)
    ids = tf.constant(np.random.default_rng(0).integers(1, 999, (1, 512)), tf.int32)
    mask = padding_mask(ids, [0])
    _, full = model(ids, ids, mask, mask)
    blocked = blockwise_attention(model, ("encoder", "decoder", "cross"), ids, ids, mask, mask)
    factor = power_of_two_block(512)
    gap = max(float(np.abs(max_pool(tf.stack(full[stack]).numpy(), factor, factor) - blocked.attention[stack]).max())
              for stack in ("encoder", "decoder", "cross"))
    row("long", "block-wise against full attention at N=512 (pooled maps, 3 stacks): max |difference|", f"{gap:.1e}",
        "≤ 1e-6")
    ids = tf.constant(np.random.default_rng(1).integers(1, 999, (1, 4096)), tf.int32)
    mask = padding_mask(ids, [0])
    run = lambda: blockwise_attention(model, ("encoder",), ids, ids, mask, mask)  # noqa: E731
    # What a focus move on the head view costs above N = 512: the same run, keeping the 64 positions around the
    # focus exact, and the full-resolution head's 256 × 256 window too.
    windows = ((2968, 2968, 64), (2944, 128, 256))
    with_windows = lambda: blockwise_attention(model, ("encoder",), ids, ids, mask, mask, windows=windows)  # noqa: E731
    seconds, windowed = _timed(run, with_windows, repeats=3 if quick else 7)
    row("long", "the engine's encoder maps at N=4096, 8 heads, 2 layers, block-wise (with the checks)",
        f"{seconds * 1e3:.0f} ms")
    row("long", "  … keeping the head view's 64 × 64 and a 256 × 256 window exact (a focus move there)",
        f"{windowed * 1e3:.0f} ms ({windowed / seconds:.2f}×)")


PARTS = {
    "startup": cold_start,
    "slider": slider_latency,
    "compute": compute,
    "payload": lambda quick: payload(),
    "traces": lambda quick: retraces(),
    "memory": memory,
    "long": long_sequences,
    "gpu": gpu,
    "largest": lambda quick: None if quick else new_seed_on_the_largest_model(),
    # their modules import this one's helpers (and ROWS, through the alias above): imported when they run
    "induction": lambda quick: (__import__("induction_bench").live_induction_training(quick),
                                __import__("induction_bench").query_key_head_change(quick)),
    "sweep": lambda quick: __import__("sweep").sweep(quick),
}


def main():

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer moves and repeats (a CI-sized run)")
    parser.add_argument("--write", action="store_true", help="write the table into BENCHMARKS.md")
    parser.add_argument("--only", choices=sorted(PARTS), action="append",
                        help="run only these parts (repeatable); BENCHMARKS.md is not written then")
    args = parser.parse_args()
    stolen, started = stolen_seconds(), time.perf_counter()
    for name, part in PARTS.items():
        if not args.only or name in args.only:
            part(args.quick)
    steal = steal_note(stolen_seconds() - stolen, time.perf_counter() - started)
    print(steal)
    if args.only:
        return
    table = ["| part | measure | figure | target |", "| --- | --- | --- | --- |"]
    table += [f"| {a} | {b} | {c} | {d} |" for a, b, c, d in ROWS]
    if args.write:
        write_section("Performance", f"`make bench{'-quick' if args.quick else ''}`; each figure beside its "
                      f"reference, measured in the same run. {MOVES_NOTE} {steal}", table)


if __name__ == "__main__":
    main()
