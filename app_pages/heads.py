"""Heads: what each head does (role scores over many lines) and, for a trained model, which heads matter (each
ablated in turn)."""

import numpy as np
import streamlit as st

from transformer.service import PATTERN_FAMILIES, ROLES, SIZED_FAMILIES, STACKS, head_label, heads_of, measured, spec_of
from ui import choices, class_room, data, link_values, model_config, openings, sidebar, state
from ui.controls import PERSIST, carried_over, fit_px, plot, stack_picker
from ui.line_sources import LINE_LABELS, line_controls, sidebar_values
from ui.pages import Page
from ui.state import F
from viz.heads import ROLE_TITLES, importance_grid, measure_grid, role_grid

ROLE_NOTES = {
    "previous_token": "query i attends to i − 1",
    "duplicate_token": "to earlier copies of its own token",
    "induction": "to the token after an earlier copy of its own (what comes next last time)",
    "first_token": "to position 0 (often a resting place)",
    "self": "to itself",
}

openings.show("heads")
openings.how("What each head does, scored over many lines: the share of its attention on a role's pattern "
             "(TransformerLens's head detector), averaged over the query rows where the pattern has a cell, padding's "
             "rows left out. 1: all of it. Below: how far a head looks and how spread out it is.")
weights = state.read(F.weights)
trained = model_config.supports().predictions  # a trained model: its task's lines, its heads' worth
controls = st.columns([3, 2, 2, 2])
with controls[0]:
    stack = stack_picker()
lines_from, overrides = line_controls(controls[1], controls[2], trained)
pattern = controls[3].selectbox("Your pattern", ("", *PATTERN_FAMILIES), key=F.roles_pattern,
                                format_func=lambda family: family or "none",
                                help="A mask family of the Masks page, scored as a role: the share of each head's "
                                "attention inside it (the Masks page's size).", disabled=stack == "cross",
                                **PERSIST) or None
config = model_config.live_config(**overrides)
carried_over(config, "heads")
size = state.read(F.mask_size) if pattern in SIZED_FAMILIES else 1
roles = data.head_roles(config, stack, pattern, size)
layers, heads = roles.entropy.shape
where = f"{roles.lines} lines of {roles.length} positions ({LINE_LABELS[lines_from].lower()})"
class_room.offer("heads", class_room.head_asked(roles, where))  # a teacher's Ask the class: which head does this?
if config.ablate:
    st.info(f"Heads ablated in the sidebar: {', '.join(map(head_label, config.ablate))} "
            f"({config.ablation}). The scores are the ablated model's.", icon=":material/block:")


def _why_empty(scores: dict, lines_from: str) -> None:
    """Say, in words, why a role has no score (grey cells with a dash), and offer lines where it has one."""
    empty = [ROLE_TITLES[role] for role in ("duplicate_token", "induction") if np.isnan(scores[role]).all()]
    if not empty:
        return
    box = st.container(border=True)
    box.markdown(f"**{' and '.join(empty).capitalize()}: no score** — no token repeats in these lines, so no row "
                 "has a cell of the pattern (a duplicate-token head looks back at an earlier copy of its own token, "
                 "an induction head at the token after one).")
    if lines_from != "repeated":
        box.button("Score on repeated random tokens", key="roles_to_repeated", icon=":material/repeat:",
                   on_click=lambda: state.update(roles_lines="repeated"),
                   help="A random segment written twice: every role has rows to score.")


def _open(stack_name: str, layer: int, head: int) -> None:
    """Open ``stack``/``layer`` on the Attention page with the lines this page scored (``head`` at full resolution
    where a grid cannot show it whole); the focus stays."""
    state.open_page(Page.ATTENTION.file, stack=stack_name, layer=layer, head=head, nv_head=head,
                    **sidebar_values(overrides))


if roles.scores:
    shown = {role: roles.scores[role] for role in (*ROLES, *(["pattern"] if pattern else []))}
    plot(role_grid(shown, roles.lines, f"{stack}: role scores over {where}", pattern=pattern or "",
                   fit_px=fit_px("roles")), "roles")
    _why_empty(roles.scores, lines_from)
    st.caption("Chance, a head spreading its attention evenly over the keys it may see, scores "
               + ", ".join(f"{ROLE_TITLES[role]} {roles.chance[role]:.2f}" for role in ROLES
                           if np.isfinite(roles.chance[role]))  # NaN: no row of these lines has the role
               + " on these lines: a head near its chance level is not doing that role, however it looks.")
    st.subheader("The strongest heads of each role")
    for role in shown:
        best = roles.strongest(role, 3)
        row = st.columns([2, 5])
        note = ROLE_NOTES.get(role, f"inside the {pattern} pattern")
        row[0].markdown(f"**{ROLE_TITLES[role]}** — {note}")
        buttons = row[1].columns(3)
        for column, (layer, head, score) in zip(buttons, best):
            column.button(f"L{layer} H{head}: {score:.2f}", key=f"open_{role}_{layer}_{head}", on_click=_open,
                          args=(stack, layer, head), help=f"Open layer {layer} on the Attention page, on these "
                          "lines.")
else:
    st.info("Cross-attention's queries and keys are different lines (target and source), so it has no token roles "
            "and no distance (a target position and a source position are not on one axis): its entropy is below.",
            icon=":material/info:")
plot(measure_grid(roles.distance, roles.entropy, roles.lines,
                  f"{stack}: " + ("how far and how spread" if roles.distance is not None else "how spread")
                  + f", over {where}", length=roles.keys, fit_px=fit_px("measures")), "measures")
state.follow_open_page()
st.page_link(Page.QUERY_KEY.file, label="One head's queries and keys over these lines: the Query–key page",
             icon=":material/scatter_plot:")

st.subheader("Which heads matter")
if not model_config.supports().ablation:
    st.markdown("Ablating a model from outside's heads is not here yet: its roles above are scored as for any "
                "model.")
    st.stop()
if trained and spec_of(weights).architecture == "decoder-only":
    st.markdown("A decoder-only model's heads are measured on the **Induction heads** page: next-token accuracy on "
                "a repeated segment with the induction heads, the previous-token heads or the others ablated.")
    st.page_link(Page.INDUCTION.file, label="Induction heads", icon=":material/content_copy:")
    st.stop()
if not trained and model_config.supports().language:
    st.markdown("A real language model has no task here whose loss and accuracy would say what a head is worth: "
                "ablate heads in the sidebar and watch its attention, and its next piece on the Decode page, change.")
    st.stop()
if not trained:
    st.markdown("Pick a trained model under **Weights** to measure what each head is worth: each head is ablated in "
                "turn and the model's loss and exact accuracy on fresh examples of its task are measured again. "
                "With random weights, ablate heads in the sidebar and watch the other pages change.")
    st.stop()
columns = st.columns(3)
kind = columns[0].radio("Ablate with", link_values.ABLATION_CHOICES, key=F.imp_kind, horizontal=True,
                        format_func=link_values.ABLATION_LABELS.get, **PERSIST)
count = columns[1].select_slider("Examples", choices.IMPORTANCE_COUNTS, key=F.imp_count, **PERSIST)
device = sidebar.session_device()
triples = heads_of(weights)
if not measured(weights, count, kind, 0, device):
    asked = columns[2].button(f"Measure all {len(triples)} heads", type="primary",
                              help="Each head ablated in turn: the loss (teacher forced) and exact accuracy (greedy "
                              "decoding) on fresh examples. Kept for this server's sessions.")
    if not asked:
        st.caption(f"{len(triples) + 1} runs of the model on {count} examples each: "
                   f"{data.price_text('head_importance', weights, count=count, kind=kind, seed=0, device=device)}.")
        st.stop()
    bar = st.progress(0.0, text="Measuring the model as it is")
    with data.pressed():  # the button was the press: a costly measure runs in the background lane
        data.measure_ablation(weights, (), count, kind, device)
        for done, triple in enumerate(triples, start=1):
            bar.progress(done / len(triples), text=f"Ablating {head_label(triple)} ({done} of {len(triples)})")
            data.measure_ablation(weights, (triple,), count, kind, device)
    bar.empty()
importance = data.head_importance(weights, count, kind, device)
st.markdown(f"The model as it is: loss **{importance.loss:.3f}**, exact accuracy **{importance.accuracy:.1%}** on "
            f"{count} fresh examples. Ablating one head at a time ({kind}):")
ranked = importance.ranked(5)
st.dataframe([{"head": head_label(triple), "accuracy change (points)": round(accuracy * 100, 1),
               "loss change": round(loss, 3)} for triple, accuracy, loss in ranked], hide_index=True)
plot(importance_grid(importance.accuracy_change, importance.loss_change, STACKS, count,
                     f"{weights}: what ablating each head costs ({kind}, {count} examples)"), "importance")
ablate_codes = [link_values.head_code(*triple) for triple, accuracy, _ in ranked if accuracy < 0]


def _ablate_costliest() -> None:
    state.update(ablate=ablate_codes, ablation=kind)


if ablate_codes:
    st.button(f"Ablate the {len(ablate_codes)} costliest heads in the sidebar", on_click=_ablate_costliest,
              help="Every page then runs the model without them.")
