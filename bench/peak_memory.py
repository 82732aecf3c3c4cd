"""The engine's peak memory for attention, measured in a fresh process (run by bench/benchmark.py).

    python bench/peak_memory.py N MODE     # MODE: blockwise | full

Prints the bytes the process's resident memory rose to during the first encoder run at N of a model of
d_model 64, 8 heads, 2 layers on one line of N tokens, above its size before the run (Linux's VmHWM,
reset first; a warm-up at 256 tokens loads the kernels without leaving large blocks in a pool).
MALLOC_MMAP_THRESHOLD_ must be set (the benchmark sets it): large blocks are then mapped and
unmapped, so a freed tensor leaves the resident size (otherwise malloc keeps it, and no peak shows).
"""

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from transformer.core.blockwise import blockwise_attention  # noqa: E402
from transformer.core.masks import padding_mask  # noqa: E402
from transformer.core.model import Transformer  # noqa: E402


def _status() -> dict:
    lines = Path("/proc/self/status").read_text().splitlines()
    return {name: int(value.split()[0]) * 1024 for name, value in (line.split(":", 1) for line in lines)
            if name in ("VmRSS", "VmHWM")}


def main():
    n, mode = int(sys.argv[1]), sys.argv[2]
    model = Transformer(1000, 1000, d_model=64, num_heads=8, d_ff=256, num_encoder_layers=2, num_decoder_layers=2,
                        dropout=0.0, max_len=n)
    ids = tf.constant(np.random.default_rng(0).integers(1, 999, (1, n)), tf.int32)
    model(ids[:, :2], ids[:, :2])
    mask = padding_mask(ids, [0])  # (1, 1, 1, N)

    def run(tokens, padding):
        if mode == "blockwise":
            blockwise_attention(model, ("encoder",), tokens, tokens, padding, padding)
        else:
            _, weights = model.encode(tokens, padding)
            [w.numpy() for w in weights]

    run(ids[:, :256], mask[..., :256])  # warm-up at a short length: kernels loaded, no large block kept in a pool
    before = _status()["VmRSS"]
    Path("/proc/self/clear_refs").write_text("5")
    run(ids, mask)  # the first run at N: every block is a new allocation
    print(max(0, _status()["VmHWM"] - before))


if __name__ == "__main__":
    main()
