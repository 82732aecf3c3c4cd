"""What each control offers: the stops of the sidebar's sliders and the pages' choices (the fields of
`ui.state` take their values from these)."""

from __future__ import annotations

from transformer.service import MAX_HEADS, MAX_SEQ_LEN, STACKS, head_counts, kv_head_counts

D_MODEL_CHOICES = (8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024)
D_FF_CHOICES = (0, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096)  # 0: no feed-forward sublayer (attention only)
# The sequence-length slider's stops: every length to 32, then steps of 4, 8, 16 and 32 up to 512, and seven
# stops to MAX_SEQ_LEN (the block-wise lengths). 71 stops make ~3.3 px each on the sidebar's slider; one stop for
# each of 512 lengths made 0.4 px, and a drag could not land on a short length such as 8.
SEQ_LEN_CHOICES = (*range(1, 33), *range(36, 65, 4), *range(72, 129, 8), *range(144, 257, 16),
                   *range(288, 513, 32), 640, 768, 1024, 1536, 2048, 3072, MAX_SEQ_LEN)
STACK_CHOICES = STACKS
# The Attention page's views under the head grid; only the chosen one runs
CELLS = ("weights", "norms")  # the head grid's cells: attention weights α, or value-weighted norms ‖α·f(x)‖
ATTENTION_VIEWS = ("Checks", "Statistics", "Model view", "Head view", "Rollout", "Neuron view", "Score terms")
LOGIT_SIZES = (1, 10, 50, 100, 500, 1000)  # the Dot-product lab's stable-softmax demo
DECODE_MODES = ("greedy", "sampled")
TEMPERATURES = (0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0)
TOP_KS = (0, 1, 2, 3, 5, 10, 20)  # 0: every token
TOP_PS = (0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 1.0)  # 1: every token
ROLE_LINE_COUNTS = (4, 8, 16, 32, 64)  # lines the Heads page scores over (task examples, repeated tokens)
IMPORTANCE_COUNTS = (50, 100, 200, 500)  # examples each head's ablation is measured on
EXPLANATION_COUNTS = (10, 25, 50, 100, 200)  # examples the explanations are scored on
INDUCTION_COUNTS = (50, 100, 200, 500)  # fresh lines the Induction page measures on
COST_MAXIMA = (256, 512, 1024, 2048, 4096)  # the Cost page's longest length
PATCH_DIRECTION_LABELS = {"denoise": "denoise: clean into corrupted (what restores the answer)",
                          "noise": "noise: corrupted into clean (what destroys it)"}
PATCH_SIDE_LABELS = {"q": "query", "k": "key", "v": "value"}  # a path's receiver input
PATCH_NORM_LABELS = {"held": "held at each run's scale", "recomputed": "recomputed on the patched stream"}
PATCH_MODELS = ("dates", "induction")  # the Patching page offers these first when the sidebar's model is not one


def head_choices(d_model: int) -> list[int]:
    """The head counts the engine accepts for d_model, up to its `MAX_HEADS`."""
    return head_counts(d_model, MAX_HEADS)


def kv_head_choices(heads: int) -> list[int]:
    """The KV-heads slider's stops: the divisors of ``heads`` below it, then 0 (= heads, the paper)."""
    return [h for h in kv_head_counts(heads) if h < heads] + [0]


def seq_len_choices(current: int) -> list[int]:
    """:data:`SEQ_LEN_CHOICES`, and ``current`` among them when it lies between two stops (a link may ask
    for any length from 1 to MAX_SEQ_LEN, and the slider shows it as it is)."""
    if current in SEQ_LEN_CHOICES or not 1 <= current <= MAX_SEQ_LEN:
        return list(SEQ_LEN_CHOICES)
    return sorted((*SEQ_LEN_CHOICES, current))


def nearest_heads(d_model: int, heads: int) -> int:
    """The valid head count closest to ``heads`` (ties go to the smaller)."""
    return min(head_choices(d_model), key=lambda h: (abs(h - heads), h))
