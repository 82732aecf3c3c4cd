"""Where a fresh process's first GPU run goes: each stage timed once, in the order the server meets them.

    python bench/gpu_first_run.py [cpu|gpu]

Stages: import TensorFlow; list the GPUs (loads the CUDA driver); the first tensor on the device (context, stream
executor, allocator); the first matrix product (cuBLAS handle); the first softmax; building the default model;
its first eager run; tracing its function; a traced run. Run it twice in fresh processes to see what a warm
CUDA compile cache (~/.nv/ComputeCache) saves.
"""

import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")
STARTED = time.perf_counter()
_last = STARTED


def stage(name: str) -> None:
    """Print the milliseconds since the last stage and since the start."""
    global _last
    now = time.perf_counter()
    print(f"{name:<44} {(now - _last) * 1e3:>9.0f} ms {(now - STARTED) * 1e3:>9.0f} ms", flush=True)
    _last = now


def main(kind: str) -> None:
    import tensorflow as tf
    stage("import tensorflow")
    from transformer.runtime.device import resolve_device, visible_gpus
    gpus = visible_gpus()
    stage(f"list GPUs ({len(gpus)}), memory growth on")
    device = resolve_device("auto" if kind == "gpu" else "cpu")
    with tf.device(device):
        x = tf.ones((256, 256))
        _ = x.numpy()
        stage(f"first tensor on {device}")
        _ = tf.matmul(x, x).numpy()
        stage("first matmul (cuBLAS on a GPU)")
        _ = tf.nn.softmax(x).numpy()
        stage("first softmax")
        _ = tf.matmul(tf.ones((512, 512)), tf.ones((512, 512))).numpy()
        stage("second matmul shape")
    from transformer import LiveConfig, ModelCache, run_live
    from transformer.live.plan import resolved
    from transformer.runtime.engine_thread import on_engine_thread
    stage("import the engine")
    cache = ModelCache()
    config = LiveConfig(device="auto" if kind == "gpu" else "cpu")
    on_engine_thread(lambda: resolved(config).model(cache))()
    stage("build the default model")
    run_live(config, cache)
    stage("first run_live (eager)")
    run_live(config, cache)
    stage("second run_live (eager)")
    on_engine_thread(cache.trace_pending)()
    stage("trace its function")
    run_live(config, cache)
    stage("first traced run_live")
    big = LiveConfig(d_model=512, num_heads=8, d_ff=2048, seq_len=512, device=config.device)
    run_live(big, cache)
    stage("d_model 512, N 512: first run (eager)")
    run_live(big, cache)
    stage("d_model 512, N 512: second run (eager)")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "gpu")
