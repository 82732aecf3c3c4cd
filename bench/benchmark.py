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
  5. memory over 300 reruns, and cold start from `make run` to the first chart;
  6. the real language model (SmolLM2-135M): loading it, its forward pass beside the induction model's.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "support"), str(ROOT / "bench")]
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from compute_bench import compute, long_sequences, new_seed_on_the_largest_model  # noqa: E402
from first_moves import first_moves  # noqa: E402
from induction_bench import live_induction_training, query_key_head_change  # noqa: E402
from real_model_bench import real_model  # noqa: E402
from report import ROWS, steal_note, stolen_seconds, write_section  # noqa: E402
from slider_bench import MOVES_NOTE, slider_latency  # noqa: E402
from sweep import sweep  # noqa: E402
from system_bench import cold_start, gpu, memory, payload, retraces  # noqa: E402
from why_bench import why  # noqa: E402

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
    "induction": lambda quick: (live_induction_training(quick), query_key_head_change(quick)),
    "sweep": sweep,
    "first": first_moves,
    "why": why,
    "real": real_model,
}


# Where a row that misses its target is explained (the table holds figures only)
OVER_TARGET_NOTE = ("A sweep row over its target is profiled in docs/performance.md (\"Every sweep row over its "
                    "target, profiled\", and the fixes measured after it): where its time goes, and why it is over.")


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
                      f"reference, measured in the same run. {MOVES_NOTE} {OVER_TARGET_NOTE} {steal}", table)


if __name__ == "__main__":
    main()
