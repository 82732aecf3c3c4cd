"""What the server and browser carry: chart payloads, retraces, memory over reruns, cold start, the GPU."""

from __future__ import annotations

import os
import random
import subprocess
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
from moves import CHART
from report import process_rss_mb, row, timed

ROOT = Path(__file__).resolve().parents[1]

# Payload


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


# Retraces


def retraces():
    from transformer import LiveConfig, ModelCache, keras_difference, run_live
    from transformer.live.plan import resolved
    from transformer.runtime.engine_thread import on_engine_thread

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
    functions = cache.get(resolved(base).model_key).functions
    check_traces = sum(function.traces for function in functions.values())
    row("traces", "retraces (forward pass, Keras check) / model builds over 100 moves of length, pads, text, seed",
        f"{result.traces - 1}, {check_traces - len(functions)} / {cache.builds - 1}", "0 / 0 after warm-up")


# Memory, cold start


def memory(quick: bool, warm_up: int = 50, reruns: int | None = None):
    """The server's RSS over ``reruns`` sequence-length moves on the Attention page, after ``warm_up`` of them."""
    from streamlit.testing.v1 import AppTest

    from ui.choices import SEQ_LEN_CHOICES

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
    from transformer.live.plan import resolved
    from transformer.runtime.device import driver_gpus, visible_gpus
    from transformer.runtime.engine_thread import on_engine_thread

    if not visible_gpus():
        why = ("the NVIDIA driver lists a GPU that TensorFlow does not see (make run GPU=1)" if driver_gpus()
               else "no GPU on this machine")
        row("gpu", "GPU rows: attention N 512–4096, forward pass, slider move",
            f"not measured: {why} (an H200's and an H100's: the GPU sections below)")
        return
    label, repeats, d_model, heads = device_label("/GPU:0"), 5 if quick else 20, 512, 8
    for n in (512, 1024, 2048, 4096):
        seconds = {}
        for device in ("/GPU:0", "/CPU:0"):
            with tf.device(device):
                layer, x = MultiHeadAttention(d_model, heads), tf.random.normal((1, n, d_model))
                layer(x, x, x)
                attend = tf.function(lambda q: layer(q, q, q)[0])
                seconds[device] = timed(lambda: attend(x).numpy(), repeats=repeats)[0]
        on_gpu, on_cpu = seconds["/GPU:0"], seconds["/CPU:0"]
        row("gpu", f"multi-head attention B=1 N={n} d_model=512 H=8: {label} / CPU ms",
            f"{on_gpu * 1e3:.2f} / {on_cpu * 1e3:.2f} ({on_cpu / on_gpu:.1f}×)")
    for choice in ("auto", "cpu"):
        config = LiveConfig(d_model=d_model, num_heads=heads, d_ff=2048, num_layers=2, seq_len=512, device=choice)
        cache = ModelCache()
        run_live(config, cache)
        on_engine_thread(cache.trace_pending)()
        forward = np.median([run_live(config, cache).compute_seconds for _ in range(repeats)])
        where = device_label(resolved(config).device)
        row("gpu", f"whole forward pass (2+2 layers, d_ff 2048) N=512 on {where}",
            f"{forward * 1e3:.1f} ms")
    row("gpu", "slider moves", f"the slider rows above ran on {label}")


