"""What a user's first moves cost on a GPU, with and without the warm-up that `make run` starts in the background,
and N = 4096 with many heads on the GPU: each step timed once, in a fresh process per mode.

    python bench/gpu_warm_start.py cold    # the first page's run, then three first moves
    python bench/gpu_warm_start.py warm    # transformer.service.warm_up_device() first, then the same
    python bench/gpu_warm_start.py idle    # the same, the first page's run 5 s after the warm-up (the idle engine
                                           # traces the warmed model meanwhile, as a server does before a user comes)
    python bench/gpu_warm_start.py large   # N = 4096: the encoder's maps of one line, 8 and 64 heads, GPU and CPU

The first page's run is the Attention page's call at the default sizes (the encoder's maps of line 0); each first
move is a shape the process has not built (a new d_model, number of heads, sequence length), as a user's first
slider moves are.
"""

import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")
STARTED = time.perf_counter()
PAGE_CALL = {"stacks": ("encoder",), "lines": (0,)}
FIRST_MOVES = {"d_model 64 → 128": {"d_model": 128}, "heads 4 → 8": {"d_model": 128, "num_heads": 8},
               "sequence length 7 → 12": {"d_model": 128, "num_heads": 8, "seq_len": 12}}


def timed(name: str, call) -> None:
    """Run ``call`` once and print its milliseconds and the process's seconds so far."""
    started = time.perf_counter()
    call()
    now = time.perf_counter()
    print(f"{name:<52} {(now - started) * 1e3:>9.0f} ms   at {now - STARTED:6.1f} s", flush=True)


def first_moves(warm: bool, idle_seconds: float = 0.0) -> None:
    timed("import the engine (TensorFlow included)", lambda: __import__("transformer.service"))
    from transformer import LiveConfig, run_live
    from transformer.service import warm_up_device

    if warm:
        timed("warm_up_device() (what make run starts)", warm_up_device)
    if idle_seconds:
        timed(f"idle ({idle_seconds:.0f} s)", lambda: time.sleep(idle_seconds))
    defaults = LiveConfig(device="auto")
    timed("first page run: Attention, default sizes", lambda: run_live(defaults, **PAGE_CALL))
    timed("the same again", lambda: run_live(defaults, **PAGE_CALL))
    for name, change in FIRST_MOVES.items():
        moved = LiveConfig(**{**defaults.__dict__, **change})
        timed(f"first move: {name}", lambda: run_live(moved, **PAGE_CALL))


def large() -> None:
    from transformer import LiveConfig, ModelCache, run_live

    for device in ("auto", "cpu"):
        for heads in (8, 64):
            config = LiveConfig(seq_len=4096, d_model=512, num_heads=heads, device=device)
            cache = ModelCache()
            label = f"N 4096, d_model 512, {heads} heads, {device}"
            timed(f"{label}: first", lambda: run_live(config, cache, **PAGE_CALL))
            timed(f"{label}: second", lambda: run_live(config, cache, **PAGE_CALL))


if __name__ == "__main__":
    mode = sys.argv[1] if len(sys.argv) > 1 else "warm"
    large() if mode == "large" else first_moves(warm=mode != "cold", idle_seconds=5.0 if mode == "idle" else 0.0)
