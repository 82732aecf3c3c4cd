"""The engine's compute: attention against Keras and the matmul peak, forward passes, decoding, head roles,
new architectures, and long sequences block-wise."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from report import row, timed

ROOT = Path(__file__).resolve().parents[1]


def compute(quick: bool):
    import keras
    import tensorflow as tf

    from transformer import LiveConfig, MultiHeadAttention, run_live
    from transformer.analysis.reference import copy_to_keras
    from transformer.live.model_cache import MODELS
    from transformer.runtime.engine_thread import on_engine_thread

    repeats = 5 if quick else 20
    size = 2048
    a = tf.random.normal((size, size))
    matmul = tf.function(lambda: tf.matmul(a, a))
    run_matmul = lambda: matmul().numpy()  # noqa: E731
    peak = 2 * size**3 / timed(run_matmul, repeats=repeats)[0]
    row("compute", f"matmul {size}×{size} (practical peak)", f"{peak / 1e9:.1f} GFLOP/s")
    d_model, heads = 512, 8
    ours = MultiHeadAttention(d_model, heads)
    for n in (64, 256, 512):
        x = tf.random.normal((1, n, d_model))
        ours(x, x, x)
        theirs = copy_to_keras(ours)
        ours_fn = tf.function(lambda q: ours(q, q, q)[0])
        theirs_fn = tf.function(lambda q: theirs(q, q))
        t_ours, t_keras, t_matmul = timed(lambda: ours_fn(x).numpy(), lambda: theirs_fn(x).numpy(), run_matmul,
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
    (rollout,) = timed(lambda: attention_rollout(weights), repeats=repeats)
    row("compute", "attention rollout N=512, 6 layers × 8 heads", f"{rollout * 1e3:.1f} ms")
    small = weights[0, :, :64, :64] / weights[0, :, :64, :64].sum(-1, keepdims=True)  # (8, 64, 64)
    tokens = [str(i % 10) for i in range(64)]
    build = lambda: chart_payload(head_view(small, np.ones((64, 64), bool), tokens, tokens))  # noqa: E731
    (seconds,) = timed(build, repeats=repeats)
    row("compute", "head view N=64, 8 heads, every line: figure and its JSON (ms / KB)",
        f"{seconds * 1e3:.1f} / {len(build()) / 1024:,.0f}", "≤ 1 MB")


def decoding(repeats: int):
    """What the Decode page's engine call costs: every step of a line by the whole model (traced), then the line
    through the cache once."""
    from transformer import LiveConfig
    from transformer.live.decode import decode
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
    (seconds,) = timed(lambda: batch_role_scores(weights, ids), repeats=repeats)
    row("compute", "head roles: 5 roles, distance and entropy of 2 layers × 4 heads over 16 lines of N=64",
        f"{seconds * 1e3:.0f} ms")
    head_page(repeats)
    importance_map()
    patching_maps()
    your_model(repeats)


def head_page(repeats: int):
    """The Heads page's engine call at its defaults: the model over 16 lines of repeated tokens, every head scored
    (a new seed each time, so nothing is remembered; the model is built and traced first)."""
    from transformer import LiveConfig
    from transformer.live.head_roles import head_roles, repeated_lines
    from transformer.live.model_cache import MODELS
    from transformer.runtime.engine_thread import on_engine_thread

    def config(seed):
        text = repeated_lines(16, 10, seed)
        return LiveConfig(source_text=text, target_text=text, seq_len=20, seed=seed)

    head_roles(config(0), "encoder")
    on_engine_thread(MODELS.trace_pending)()
    seeds = iter(range(1, 10 * repeats + 2))
    (seconds,) = timed(lambda: head_roles(config(next(seeds)), "encoder", pattern="window"), repeats=repeats)
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
    t_external, t_lab = timed(external, lab, repeats=repeats)
    row("compute", "Your model: a text move on the Attention page, a small GPT-2 preset (2 layers × 4 heads, d 64) / "
        "the lab's default model", f"{t_external * 1e3:.0f} / {t_lab * 1e3:.0f} ms ({t_external / t_lab:.1f}×)")


def importance_map():
    """The Heads page's importance map at its default size: every head of reverse and of dates ablated in turn on 200
    examples (loss and greedy decoding), cold (each head measured once; the traced functions made on the way)."""
    from transformer.live.importance import head_importance

    for name in ("reverse", "dates"):
        started = time.perf_counter()
        importance = head_importance(name, 200, seed=int(time.time()))  # a fresh draw: nothing remembered
        row("compute", f"importance map: every head of {name} ablated in turn, 200 examples (24 heads + the "
            f"model)", f"{(time.perf_counter() - started):.1f} s", "a progress bar while it runs")
        del importance


def patching_maps():
    """The Patching page's layer × head map of dates and of induction, cold: a fresh line (a new seed, nothing
    remembered), its two plain runs, the source recorded and every head patched in batched runs; against the model's
    own plain forward pass in the same run (the ratio holds on a busy host)."""
    from transformer.live import patching
    from transformer.training.pretrained import load_pretrained

    for name, metric in (("dates", "logit_diff"), ("induction", "attention")):
        seed = int(time.time()) % 100_000
        line = patching.patching_line(name, seed)
        lines = patching.patching_lines(name, line, seed=seed, metric=metric)
        model = load_pretrained(name).model
        model(*lines.clean_inputs.rows(1))  # the model's first run (weights, TensorFlow's first ops) is not the map's
        started = time.perf_counter()
        model(*lines.clean_inputs.rows(1))
        plain = time.perf_counter() - started
        started = time.perf_counter()
        patching.patching_study(patching.PatchRequest(name, line, seed=seed, metric=metric))
        seconds = time.perf_counter() - started
        row("compute", f"Patching page: the layer × head map of {name} ({metric}), a fresh line", f"{seconds:.2f} s "
            f"({seconds / plain:.0f}× one plain forward pass)", "≤ 2 s")


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
    from transformer.core.shape import MAX_D_FF, MAX_D_MODEL, MAX_LAYERS
    from transformer.core.weight_init import seed_weights
    from transformer.live.config import LiveConfig
    from transformer.live.model_cache import ModelCache
    from transformer.live.plan import resolved

    cache = ModelCache(size=1)
    largest = LiveConfig(d_model=MAX_D_MODEL, num_heads=8, d_ff=MAX_D_FF, num_layers=MAX_LAYERS, device="cpu")
    model = cache.get(resolved(largest).model_key).model  # the key as the engine makes it
    seconds = []
    for seed in range(1, repeats + 1):
        started = time.perf_counter()
        seed_weights(model, seed)
        seconds.append(time.perf_counter() - started)
    weights_mb = cache.weight_bytes() / 2**20
    row("compute", f"a new seed on the largest model (d_model {MAX_D_MODEL}, d_ff {MAX_D_FF}, {MAX_LAYERS} layers, "
        f"{weights_mb:.0f} MB of weights): every weight redrawn, median of {repeats}",
        f"{np.median(seconds) * 1e3:.0f} ms")


# Long sequences, block-wise


def long_sequences(quick: bool):
    """Block-wise attention: its peak memory at N = 4096 (a fresh process), its agreement with full attention
    where both fit, and the engine's encoder run at N = 4096."""
    import tensorflow as tf

    from transformer.core.blockwise import blockwise_attention, power_of_two_block
    from transformer.core.masks import padding_mask
    from transformer.core.model import Transformer
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
    seconds, windowed = timed(run, with_windows, repeats=3 if quick else 7)
    row("long", "the engine's encoder maps at N=4096, 8 heads, 2 layers, block-wise (with the checks)",
        f"{seconds * 1e3:.0f} ms")
    row("long", "  … keeping the head view's 64 × 64 and a 256 × 256 window exact (a focus move there)",
        f"{windowed * 1e3:.0f} ms ({windowed / seconds:.2f}×)")
    if quick:
        return
    from transformer import LiveConfig, ModelCache, device_label, resolve_device, run_live

    # The Attention page's run at N = 4096 (the encoder's maps of one line, checks included): many heads cost
    # what every head's weights cost, beside 8 heads on the same model otherwise. The sidebar's lines are a few
    # tokens padded to N (the keys no line allows are left out: transformer.core.blockwise.KeptKeys); a line of
    # 4096 tokens attends over every key (~1 min in all).
    full_line = dict(source_text=" ".join(str(1 + i % 9) for i in range(4096)), target_text="1 2 3")
    configs = [(LiveConfig(seq_len=4096, d_model=512, num_heads=heads, **text), stack)
               for heads, text, stack in ((8, {}, "encoder"), (64, {}, "encoder"), (64, full_line, "encoder"),
                                          (64, {}, "decoder"))]
    cache = ModelCache(size=4)
    started = time.perf_counter()
    run_live(configs[2][0], cache, stacks=("encoder",), lines=(0,))  # the shape's first run: builds and compiles
    first_full = time.perf_counter() - started
    eight, many, many_full, decoder, eager_full = timed(*(
        lambda config=config, stack=stack, eager=eager: _run_blocks(config, cache, stack, eager)
        for config, stack, eager in (*((config, stack, False) for config, stack in configs),
                                     (configs[2][0], "encoder", True))), repeats=3)
    where = device_label(resolve_device())
    row("long", f"the Attention page's run at N=4096, d_model 512, the sidebar's padded line: 64 heads / 8 heads "
        f"({where})", f"{many:.1f} / {eight:.1f} s ({many / eight:.1f}×)", "≤ 5 s at 64 heads")
    row("long", "  … a line of 4096 tokens (every key allowed), 64 heads: compiled blocks / eager blocks; the "
        "process's first run of the shape (builds the model, compiles)",
        f"{many_full:.1f} / {eager_full:.1f} s ({eager_full / many_full:.2f}×); first {first_full:.1f} s",
        "≤ 5 s at 64 heads")
    row("long", "  … the decoder stack (with the encoder's run), the sidebar's padded lines, 64 heads",
        f"{decoder:.1f} s", "≤ 5 s at 64 heads")


def _run_blocks(config, cache, stack: str, eager: bool):
    """The Attention page's run of ``stack``; ``eager``: no layer compiles its blocks (the kernel before
    `transformer.core.fused_attention`, measured beside it)."""
    from transformer import run_live
    from transformer.core import fused_attention

    least = fused_attention.FUSED_MIN_CELLS
    fused_attention.FUSED_MIN_CELLS = 1 << 62 if eager else least
    try:
        return run_live(config, cache, stacks=(stack,), lines=(0,))
    finally:
        fused_attention.FUSED_MIN_CELLS = least
