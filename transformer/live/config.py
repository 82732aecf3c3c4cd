"""The live engine's configuration: its limits, `LiveConfig`, and the checks that refuse what cannot run."""

from __future__ import annotations

from dataclasses import dataclass

from transformer.core.blockwise import FULL_ATTENTION_MAX
from transformer.core.masks import MASK_FAMILIES, SIZED_FAMILIES, size_range
from transformer.core.shape import ModelShape, check_architecture, check_norm, check_range
from transformer.runtime.device import resolve_device

VOCAB_SIZE = 1000  # ids 0..999; shared by source and target
ROLES_MAX_LINES = 64  # lines a head-roles study scores at most (`transformer.live.head_roles`)
PROMPT_STEPS = 8  # tokens a decoder-only model with random weights adds to its prompt (`transformer.live.decode`)
MAX_SEQ_LEN = 4096  # above transformer.core.blockwise.FULL_ATTENTION_MAX (512) attention runs block-wise
ATTENTION_BUDGET_BYTES = 256 * 2**20  # all attention weights of one run, float32

SEED_BATCH = "1 2 3 4 5 0 0\n1 2 0 0 0 0 0\n1 2 3 4 5 6 7"


@dataclass(frozen=True)
class LiveConfig(ModelShape):
    """Everything a view depends on: a model's shape (`ModelShape`: d_model, num_heads, d_ff, num_layers,
    positions, num_kv_heads, norm, architecture) and what it runs on; hashable, so it can key caches."""

    seq_len: int = 7  # N: every line is padded or truncated to this
    pad_symbols: tuple = ("0", "<pad>")  # the first one pads short lines
    source_text: str = SEED_BATCH  # one sequence per line
    target_text: str = SEED_BATCH
    seed: int = 0  # seeds the random weights, each from the seed and its place in the model (weight_init)
    device: str = "auto"  # "auto" (GPU when present) or "cpu"
    padding_masks: bool = True  # False: draw what attention does without padding masks
    look_ahead_mask: bool = True  # False: the decoder may look ahead
    weights: str = "random"  # where the model comes from: "random" (seeded), a trained model's name, hub:/upload:
    # (transformer.live.sources.source_of reads it)
    mask_family: str = "paper"  # transformer.core.masks.MASK_FAMILIES: the self-attention pattern
    mask_size: int = 4  # the prefix length, window, stride or block size of a sized family
    ablate: tuple = ()  # ((stack, layer, head), …): heads whose output is replaced (transformer.core.ablation)
    ablation: str = "zero"  # … by zeros, or by its mean over the lines' real positions ("mean": ablation_means)


def validate(config: LiveConfig) -> None:
    """Raise ValueError naming the offending values of what every model shares (the length, device, masks,
    architecture, norm); what depends on the model is its source's to check (`transformer.live.sources`)."""
    check_range("seq_len", config.seq_len, 1, MAX_SEQ_LEN)
    resolve_device(config.device)
    _check_mask_family(config)
    check_architecture(config.architecture)
    check_norm(config.norm)
    if config.ablate and config.seq_len > FULL_ATTENTION_MAX:
        raise ValueError(f"Heads are ablated in full attention, up to N = {FULL_ATTENTION_MAX}; longer lines run "
                         f"block-wise. Received: seq_len={config.seq_len} with {len(config.ablate)} heads ablated")


def _check_mask_family(config: LiveConfig) -> None:
    if config.mask_family not in MASK_FAMILIES:
        raise ValueError(f"mask_family must be one of {MASK_FAMILIES}. Received: mask_family={config.mask_family!r}")
    if config.mask_family in SIZED_FAMILIES:
        low, high = size_range(config.mask_family, config.seq_len)
        if isinstance(config.mask_size, bool) or not isinstance(config.mask_size, int) \
                or not low <= config.mask_size <= high:
            raise ValueError(f"The {SIZED_FAMILIES[config.mask_family]} must be from {low} to the sequence length. "
                             f"Received: mask_size={config.mask_size!r}, seq_len={config.seq_len}")


def attention_bytes(batch, heads, layers, length, stacks=3) -> int:
    """float32 bytes of every attention map of one run (``stacks`` stacks of L layers)."""
    return 4 * batch * heads * stacks * layers * length * length


def check_budget(config: LiveConfig, batch: int) -> None:
    """Refuse, with the numbers, a run whose attention maps would not fit the budget (a block-wise run, above
    512 positions, keeps pooled maps only: no budget)."""
    if config.seq_len > FULL_ATTENTION_MAX:
        return
    stacks = len(config.stacks)
    needed = attention_bytes(batch, config.num_heads, config.num_layers, config.seq_len, stacks)
    if needed > ATTENTION_BUDGET_BYTES:
        raise ValueError(
            f"The attention maps would need {needed / 2**20:,.0f} MB "
            f"(B={batch} lines × H={config.num_heads} heads × {stacks} stacks × {config.num_layers} layers × "
            f"N²={config.seq_len}² × 4 bytes); the limit is {ATTENTION_BUDGET_BYTES / 2**20:,.0f} MB. "
            "Lower the heads, layers, sequence length or number of lines."
        )
