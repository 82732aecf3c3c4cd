"""Induction heads: the shipped two-layer attention-only model continues a segment it has seen earlier in the line;
which heads do it, what ablating them costs, and one line's loss at every position."""

import streamlit as st

from transformer.service import GROUP_LABELS, GROUPS, available
from ui import choices, data, openings, state
from ui.controls import PERSIST, fit_px, plot
from ui.pages import Page
from ui.state import F
from ui.weights import use_weights
from viz.heads import role_grid
from viz.induction import ablation_figure, position_loss_figure

openings.show("induction")
openings.how("A model that has seen `A B` earlier in a line and now reads `A` again can predict `B` only from the "
             "line itself. Olsson et al. (2022) found the circuit that does it in a two-layer attention-only model: a "
             "**previous-token head** in layer 0 writes into each position which token came before it, and an "
             "**induction head** in layer 1 looks for the position whose previous token is the current one and "
             "copies what is there. The **induction** model shipped here was trained on lines of 300 random "
             "syllables in which a segment appears twice, at random offsets (`python -m transformer.training.train "
             "--task induction`, 105 s on 2 cores). Below: fresh lines of 48–64 tokens with a segment of 8–20.")
if "induction" not in available():
    st.info("The induction model's weights are missing: run `python -m transformer.training.train --task "
            "induction`, or train one on the Train page.", icon=":material/info:")
    st.stop()
controls = st.columns(2)
seed = controls[0].number_input("Lines (seed)", min_value=0, max_value=2**31 - 1, key=F.ind_seed, **PERSIST,
                                help="The fresh lines are drawn from this seed; the chart below shows the first.")
count = controls[1].select_slider("How many lines", choices.INDUCTION_COUNTS, key=F.ind_count, **PERSIST)
device = state.value(F.device)
study = data.induction_study(int(seed), int(count), state.read(F.ind_ablate), device)  # the loss chart's study (below)
base = study.accuracy["none"]
metrics = [*st.columns(2), *st.columns(2)]  # two rows of two: four to a row cut the labels off with "…"
metrics[0].metric("Second occurrence: next tokens right", f"{base['second']:.1%}",
                  help="A share of next tokens (from the repeat's 2nd token on), over every line: not of whole lines.")
metrics[1].metric("First occurrence: next tokens right", f"{base['first']:.1%}",
                  help=f"Chance is 1 in {study.vocabulary} ({1 / study.vocabulary:.1%}): nothing earlier in the line "
                       "says what comes next.")
for column, group in zip(metrics[2:], ("induction", "previous_token")):
    ablated_second = study.accuracy[group]["second"]
    column.metric(f"{GROUP_LABELS[group].removeprefix('the ').capitalize()} ablated", f"{ablated_second:.1%}",
                  delta=f"{(ablated_second - base['second']) * 100:+.1f} points")
line = study.line


@st.fragment
def loss_view() -> None:
    """The loss along the first line and the heads it ablates: a click on the radio reruns this alone, not the page
    and its sidebar (docs/performance.md). The study is the page's (cached): only its loss depends on the radio."""
    ablated = st.radio("Ablate (zero) in the loss chart", GROUPS, key=F.ind_ablate, format_func=GROUP_LABELS.get,
                       horizontal=True, **PERSIST)
    shown = data.induction_study(int(seed), int(count), ablated, device)
    plot(position_loss_figure(line.tokens, shown.loss, line.first, line.second, line.size, shown.vocabulary,
                              f"next-token loss along the first line<br>({GROUP_LABELS[ablated]} ablated)",
                              fit_px=fit_px("ind_loss")), "ind_loss")
    st.caption("High on the first occurrence (nothing in the line says what comes next), low on the second from its "
               "2nd token on: the model copies. Ablate the induction heads and the second occurrence is as hard as "
               "the first.")
    state.write_url()  # a fragment's rerun does not reach app.py, which writes the link after a whole run


loss_view()
columns = st.columns([3, 2])
with columns[0]:
    plot(ablation_figure(study.accuracy, study.groups, GROUP_LABELS, study.lines), "ind_ablation")
with columns[1]:
    plot(role_grid(study.scores, study.lines, f"role scores over {study.lines} lines", columns=2), "ind_roles")
named = {group: ", ".join(f"L{layer} H{head}" for layer, head in heads) or "none"
         for group, heads in study.groups.items()}
st.markdown(f"**Induction heads** (score ≥ 0.5): {named['induction']} · **previous-token heads**: "
            f"{named['previous_token']} · **others**: {named['others']}.")
if not study.groups["others"] or all(layer == 0 for layer, _ in study.groups["others"]):
    st.caption("Every layer-1 head became an induction head: in this task copying is all layer 1 can do, so there "
               "is no layer-1 head left to ablate as a control; the other heads are in layer 0.")


def _open(page: str, **settings) -> None:
    use_weights("induction")
    text = line.text
    state.open_page(page, **{**dict(src=text, seq_len=len(line.tokens), stack="decoder", layer=1, element=0,
                                    focus=line.second + 2, dec_src=" ".join(line.tokens[: line.second + 2]),
                                    dec_step=0), **settings})


def _why() -> None:
    """The Attention page's score terms of the strongest induction head, from the query two tokens into the second
    occurrence to the token after its earlier occurrence (the key an induction head should find)."""
    layer_1 = [head for layer, head in study.groups["induction"] if layer == 1] or [0]
    _open(Page.ATTENTION.file, view="Score terms", nv_head=layer_1[0], nv_other=line.first + 3)


st.markdown("**Why an induction head attends where it does**: its score for the right key, split by the parts of "
            "the residual stream, comes from the outputs of layer 0's previous-token heads, not from the key's own "
            "token (K-composition, Elhage et al. 2021).")
st.button("Why: the score terms of this line's induction head", on_click=_why, key="ind_why",
          help="The Attention page's Score terms view: layer 1, the query two tokens into the second occurrence, "
               "the key after the earlier occurrence of its token.")
links = st.columns(3)
links[0].button("This line on the Attention page", on_click=_open, args=(Page.ATTENTION.file,),
                key="ind_attention", help="Layer 1, the query two tokens into the second occurrence focused.")
links[1].button("Continue it on the Decode page", on_click=_open, args=(Page.DECODE.file,), key="ind_decode",
                help="The line cut two tokens into its second occurrence: the model writes the rest.")
links[2].button("Train one and watch it form", on_click=lambda: state.open_page(
    Page.TRAIN.file, train_task="induction"), key="ind_train")
state.follow_open_page()
