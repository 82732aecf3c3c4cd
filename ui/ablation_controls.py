"""The sidebar's heads to ablate: every head of the sidebar's model as a code, and the controls that pick them."""

from __future__ import annotations

from transformer.service import ARCHITECTURE_STACKS
from ui import link_values, model_config, state
from ui.controls import PERSIST
from ui.state import F


def head_codes(spec) -> list[str]:
    """Every head of the sidebar's model as a head code (`link_values.head_code`), stack by stack, layer by layer."""
    layers = spec.num_layers if spec else state.read(F.layers)
    heads = spec.num_heads if spec else state.read(F.heads)
    return [link_values.head_code(stack, layer, head) for stack in ARCHITECTURE_STACKS[model_config.architecture()]
            for layer in range(layers) for head in range(heads)]


def head_code_label(code: str) -> str:
    stack, layer, head = link_values.head_triple(code)
    return f"{stack} L{layer} H{head}"


def ablation_controls(bar, spec) -> None:
    """Heads to ablate (every page runs the model without them) and how: zeros or their mean. Heads the model no
    longer has (fewer layers or heads, another architecture) leave the list, said in a notice."""
    options = head_codes(spec)
    chosen = state.value(F.ablate)
    gone = [code for code in chosen if code not in options]
    if gone:
        state.put(F.ablate, [code for code in chosen if code in options])
        state.notify(f"This model has no {', '.join(map(head_code_label, gone))}: "
                     f"{'it is' if len(gone) == 1 else 'they are'} no longer ablated.")
    if len(state.read(F.ablate)) == len(options):  # every head: nothing would attend
        state.put(F.ablate, state.read(F.ablate)[:-1])
        state.notify("Ablating every head leaves nothing to attend: the last one is kept.")
    bar.multiselect("Ablate heads", options, key=F.ablate, format_func=head_code_label,
                    placeholder="None: every head works", max_selections=len(options) - 1 or None,
                    help="Replace these heads' output (before the heads are merged) and watch every page: the "
                    "attention of the layers after them, a trained model's predictions, its decoding. The Heads page "
                    "finds the heads that matter.", **PERSIST)
    if state.read(F.ablate):
        bar.radio("Ablation", link_values.ABLATION_CHOICES, key=F.ablation, horizontal=True,
                  format_func=link_values.ABLATION_LABELS.get,
                  help="Zeros: the head's output is 0. Mean: its output is its mean over the real positions of "
                  "the sidebar's lines, in the model without ablation: one mean for every line and page (the head "
                  "still says something, but nothing about this token).",
                  **PERSIST)
