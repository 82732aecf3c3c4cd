"""`make gpu-check`: TensorFlow's devices, then one forward pass of the default model and of d_model 512 / N 512
on each device, timed (first run: build and eager; then traced, the median of five); then, at N = 512, the maps
copied whole against max-pooled on the device to 128 cells a side first (`run_live(pool_to=128)`), and how much of
a traced run is the arithmetic (the maps reduced to one number on the device) and how much the copy; last,
SmolLM2-135M (the real language model) on each device: Load it, then the Attention page's run at N = 32 and 128."""

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
    from transformer.runtime.device import driver_gpus, missing_gpu_notice, resolve_device, visible_gpus
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
    print(f"\n{'device':<32} {'N = 512, d_model 512, 8 heads':<40} {'maps':>10} {'pooled':>10} {'compute':>10}")
    for choice in ["cpu"] + (["auto"] if visible_gpus() else []):
        config = LiveConfig(d_model=512, num_heads=8, d_ff=2048, seq_len=512, device=choice)
        for name, call in {"every stack, every line": {}, "one stack, one line (the page)":
                           {"stacks": ("encoder",), "lines": (0,)}}.items():
            print(f"{device_label(resolve_device(choice)):<32} {name:<40} "
                  + " ".join(f"{ms:>7.1f} ms" for ms in pooled_figures(config, call)))
    real_model_rows(["cpu"] + (["auto"] if visible_gpus() else []))


REAL_LINE = "When Mary and John went to the store, John gave a drink to Mary. " * 12


def real_model_rows(choices: list[str]) -> None:
    """SmolLM2-135M on each device: Load it (dequantised, built, its attention function traced), then the
    Attention page's run of two lines at N = 32 and N = 128 (the median of five); a line saying why where its wheel
    is not installed, and that the GPU was not measured on a machine without one."""
    from transformer import LiveConfig, device_label, run_live
    from transformer.external.gguf_llama import smollm2_path
    from transformer.live.loading import load_model
    from transformer.runtime.device import resolve_device

    print(f"\n{'device':<32} {'SmolLM2-135M':<40} {'Load it':>10} {'N = 32':>10} {'N = 128':>10}")
    try:
        smollm2_path()
    except ValueError as missing:
        print(f"{'':<32} not measured: {missing}")
        return
    for choice in choices:
        started = time.perf_counter()
        load_model("smollm2", choice)
        loaded = time.perf_counter() - started
        passes = [median_ms(lambda n=n: run_live(LiveConfig(
            weights="smollm2", architecture="decoder-only", target_text=f"{REAL_LINE}\n{REAL_LINE}", seq_len=n,
            device=choice), stacks=("decoder",)), repeats=5) for n in (32, 128)]
        print(f"{device_label(resolve_device(choice)):<32} {'loaded and traced; then two lines':<40} "
              f"{loaded:>8.1f} s " + " ".join(f"{ms:>7.0f} ms" for ms in passes))
    if "auto" not in choices:
        print(f"{'a GPU':<32} not measured: TensorFlow sees no GPU here")


def median_ms(function, repeats: int = 7) -> float:
    import numpy as np

    function()
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        function()
        times.append(time.perf_counter() - started)
    return float(np.median(times)) * 1e3


def pooled_figures(config, call: dict) -> tuple[float, float, float]:
    """Traced ``run_live`` with the whole maps copied, with them pooled to 128 cells on the device first, and the
    attention function alone with its maps summed on the device (no copy)."""
    import tensorflow as tf

    from transformer import ModelCache, run_live
    from transformer.live.inputs import batch_rows
    from transformer.live.plan import plan_of, resolved
    from transformer.runtime.engine_thread import on_engine_thread

    cache = ModelCache()
    run_live(config, cache, **call)
    run_live(config, cache, pool_to=128, **call)
    on_engine_thread(cache.trace_pending)()
    whole = median_ms(lambda: run_live(config, cache, **call))
    pooled = median_ms(lambda: run_live(config, cache, pool_to=128, **call))
    entry, inputs = on_engine_thread(lambda: (resolved(config).model(cache), plan_of(config).inputs))()
    stacks = call.get("stacks", config.stacks)
    function = entry.attention_function(tuple(s for s in config.stacks if s in stacks))
    rows = call.get("lines") or tuple(range(inputs.batches.source.ids.shape[0]))
    arguments = batch_rows(rows, inputs.batches.source.ids, inputs.batches.target.ids, inputs.masks.run_source,
                           inputs.masks.run_target)

    @on_engine_thread
    def compute_only():
        with tf.device(entry.device):
            maps = function(*arguments)
            return float(sum(tf.reduce_sum(weights) for weights in maps.values()))
    return whole, pooled, median_ms(compute_only)


if __name__ == "__main__":
    main()
