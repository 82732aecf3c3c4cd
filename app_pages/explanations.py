"""Explanations: which explanation of a trained encoder-decoder's output is right, measured against the alignment its
task knows — six methods' top source token and a deletion test, on fresh examples, and one line's maps side by
side."""

import streamlit as st

from transformer.service import EXPLAINED_TASKS, METHODS, START, available, is_measured, task_of
from ui import choices, class_room, data, model_config, openings, sidebar, state
from ui.controls import PERSIST, element_picker, fit_px, plot
from ui.state import F
from ui.weights import use_weights
from viz.explanations import explanation_maps, faithfulness_bars

openings.show("explanations")
openings.how(
    "Attention is often read as an explanation: *this output came from that input*. Whether it is one was argued "
    "both ways (Jain & Wallace 2019, \"Attention is not Explanation\"; Wiegreffe & Pinter 2019, \"… not not "
    "Explanation\"). Here the right answer is known: each task says which source token each output token comes "
    "from. Six methods point at a source token for every output token — the **last layer's cross-attention** (its "
    "heads' mean), **rollout** and **flow** through both stacks (Abnar & Zuidema 2020), **norm rollout** (rollout "
    "of the value-weighted norms, Kobayashi et al. 2020), **gradient × input** on the source embeddings, and the "
    "cross-attention of the **head whose ablation costs the most**. Each is scored on fresh examples, teacher forced "
    "on the right answer: how often its top source token is the aligned one, and a deletion test — its top 1, 2, 3 "
    "source tokens replaced by `<pad>` (masked), the drop in the aligned output token's probability averaged over "
    "k (AOPC), against deleting k random source tokens.")
weights = state.read(F.weights)
if not model_config.supports().predictions or task_of(weights) not in EXPLAINED_TASKS:
    st.info(f"Pick a trained model of {', '.join(EXPLAINED_TASKS)} under **Weights** (shipped or trained on the "
            "Train page): those tasks know each output token's source token.", icon=":material/info:")
    shipped = [name for name in available() if task_of(name) in EXPLAINED_TASKS]
    for column, name in zip(st.columns(len(shipped) or 1), shipped):
        column.button(name, key=f"explain_{name}", on_click=use_weights, args=(name,), use_container_width=True)
    st.stop()

count = st.select_slider("Examples", choices.EXPLANATION_COUNTS, key=F.ex_count, **PERSIST,
                         help="Fresh examples of the task (the same ones for every method, drawn from seed 0).")
device = sidebar.session_device()
if not is_measured(weights, count, 0, device):
    offer = st.empty()  # the button and its caption, gone once the scores are made
    with offer.container():
        asked = st.button(f"Score the six methods on {count} examples", type="primary",
                          help="Kept for this server's sessions (and across restarts, in the data directory).")
        st.caption(f"Flow solves a maximum flow for every source token and output token. Scoring costs "
                   f"{data.price_text('faithfulness', weights, count=count, seed=0, device=device)}.")
    if not asked:
        st.stop()
    offer.empty()
    with st.spinner(f"Scoring six methods on {count} examples of {task_of(weights)}…"), data.pressed():
        data.faithfulness(weights, count, device)
scores = data.faithfulness(weights, count, device)
class_room.offer("explanations", class_room.method_asked(METHODS, scores.top1, task_of(weights)))
layer, head = scores.head
st.markdown(f"**{scores.outputs}** aligned output tokens of {count} examples; the model gives them probability "
            f"**{scores.base:.3f}** on average. The head whose ablation costs the most: cross-attention layer "
            f"{layer} head {head}.")
st.dataframe([{**row, "AOPC − random": row["AOPC"] - row["AOPC random"]} for row in scores.rows()], hide_index=True,
             column_config={"top-1 aligned": st.column_config.NumberColumn(format="percent"),
                            "top-1 same symbol": st.column_config.NumberColumn(format="percent"),
                            "AOPC": st.column_config.NumberColumn(format="%.3f"),
                            "AOPC random": st.column_config.NumberColumn(format="%.3f"),
                            "AOPC − random": st.column_config.NumberColumn(format="%+.3f")})
plot(faithfulness_bars(METHODS, scores.top1, scores.aopc, scores.random_aopc,
                       f"{count} examples of {task_of(weights)}: each method", fit_px("faithfulness")),
     "faithfulness")

st.subheader("One line, every method")
lines = [line for line in state.read(F.src).splitlines() if line.strip()]
if not lines:
    st.info("Type a source line in the sidebar to see its maps.", icon=":material/info:")
    st.stop()
element = element_picker(len(lines))
example = data.example_maps(weights, lines[element], count, device)
plot(explanation_maps(example.maps, example.source_tokens, example.target_tokens, example.aligned,
                      fit_px("explanation_maps"), read_tokens=[START, *example.target_tokens[:-1]]),
     "explanation_maps")
st.caption("Rows are the output positions, each named by the token it reads (teacher forced: the right answer so "
           "far) and, after the arrow, the token it writes; columns the source's; each row is scaled to its "
           "largest magnitude (gradient × input can be negative: blue). The outlined cell is the source token the "
           "output comes from; the dot marks each method's top source token.")
