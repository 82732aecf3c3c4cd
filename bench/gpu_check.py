"""`make gpu-check`: TensorFlow's devices, then one forward pass of the default model and of d_model 512 / N 512
on each device, timed (first run: build and eager; then traced, the median of five)."""

import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")


def main() -> None:
    import numpy as np
    import tensorflow as tf

    from transformer import LiveConfig, ModelCache, device_label, run_live
    from transformer.runtime.device import driver_gpus, missing_gpu_notice, visible_gpus
    from transformer.runtime.engine_thread import on_engine_thread

    print(f"TensorFlow {tf.__version__}, built with CUDA: {tf.test.is_built_with_cuda()}")
    print(f"NVIDIA driver lists: {', '.join(driver_gpus()) or 'no GPU (no nvidia-smi, or no GPU listed)'}")
    print(f"TensorFlow sees: {', '.join(device.name for device in tf.config.list_physical_devices()) or 'nothing'}")
    if missing_gpu_notice():
        print(missing_gpu_notice())
    sizes = {"default model": LiveConfig(),
             "d_model 512, 8 heads, d_ff 2048, N 512": LiveConfig(d_model=512, num_heads=8, d_ff=2048, seq_len=512)}
    print(f"\n{'device':<32} {'model':<40} {'first run':>10} {'traced':>10}")
    for choice in ["cpu"] + (["auto"] if visible_gpus() else []):
        for name, config in sizes.items():
            config = LiveConfig(**{**config.__dict__, "device": choice})
            cache = ModelCache()
            started = time.perf_counter()
            first = run_live(config, cache)
            first_seconds = time.perf_counter() - started
            on_engine_thread(cache.trace_pending)()
            traced = np.median([run_live(config, cache).compute_seconds for _ in range(5)])
            print(f"{device_label(first.device):<32} {name:<40} {first_seconds * 1e3:>8.0f} ms "
                  f"{traced * 1e3:>7.1f} ms")


if __name__ == "__main__":
    main()
