"""Decode: a trained model writes its answer token by token, or a decoder-only model continues a prompt; each step's
attention, choice and key/value cache."""

import datetime

import streamlit as st

from transformer.service import date_text, get_task, task_of
from ui import choices, class_room, data, model_config, openings, state
from ui.controls import PERSIST, clamp, fit_px, not_for_external_model, options_follow, plot_steps
from ui.state import F
from ui.stepper import stepper
from ui.text import count
from ui.weights import use_weights, weight_choices, weights_label
from viz.decoding import cache_heatmaps, distribution, look_ahead_row, step_attention

REAL_PROMPT = "The capital of France is"
openings.show("decode")
name = state.read(F.weights)  # the sidebar's model, as on every page
config = model_config.live_config()
outside = model_config.supports().outside
trained = model_config.supports().predictions  # a trained model writes its task's answer
if outside and config.architecture != "decoder-only":
    not_for_external_model("Your model is a bidirectional encoder: it does not write text, so there is nothing to "
                           "decode.")
# random weights (decoder-only), a trained decoder-only model and a causal model from outside continue a prompt
prompting = config.architecture == "decoder-only"
if outside:
    st.markdown("Your model continues a prompt: at each step it reads the prompt and what it "
                "has written so far (its look-ahead mask lets the newest position see only those) and chooses the "
                "next token from its distribution. It runs whole on the prefix at each step (no key/value cache "
                "here).")
elif model_config.supports().language:
    st.markdown("A real language model continues a prompt: at each step it reads the prompt and what it has written "
                "so far (the look-ahead mask lets the newest position see only those) and chooses the next piece of "
                f"text from its {model_config.source().priced_shape(config)[1]:,}. It keeps each layer's keys and "
                f"values as it goes (the key/value cache, below: {config.kv_heads} key/value heads serve its "
                f"{config.num_heads} query heads, {config.kv_heads / config.num_heads:.0%} of the cache one per "
                "head would take).")
elif prompting and trained:
    st.markdown("A decoder-only model continues a prompt: at each step it reads the prompt and what it has written "
                "so far (the look-ahead mask lets the newest position see only those) and chooses the next token. "
                "The induction model learned one thing: to continue a segment it has seen earlier in the line. "
                "Start a repeat in the prompt and watch it copy; its layer-1 heads look at the token after the "
                "earlier occurrence.")
elif prompting:
    st.markdown("A decoder-only model continues a prompt: at each step it reads the prompt and what it has written "
                "so far (the look-ahead mask lets the newest position see only those) and chooses the next token. "
                "Its weights are random, so the words are noise; the mechanism is the one GPT runs. It chooses "
                "among the tokens of the sidebar's target lines.")
    if config.mask_family != "paper":
        st.info(f"Decoding steps with the look-ahead mask alone: the Masks page's {config.mask_family} family, which "
                "the other pages draw, is not applied here.", icon=":material/info:")
else:
    st.markdown("At each step the decoder reads what it has "
                "written so far (the look-ahead mask lets the newest position see only that), looks at the source "
                "through cross-attention, and chooses the next token from its distribution.")
if model_config.supports(name).shape and not prompting:
    models = [model for model in weight_choices() if not model_config.supports(model).shape]
    why = ("An encoder-only model has no decoder: it does not write. " if config.architecture == "encoder-only"
           else "")
    st.info(why + "Decoding needs a trained model (the sidebar's **Weights** are seeded random weights), or a "
            "decoder-only architecture, which continues a prompt. " + ("Choose a trained model here or under "
                                                                       "Weights." if models else
                                                                       "No trained model is available: train one on "
                                                                       "the Train page."),
            icon=":material/play_circle:")
    with st.container(horizontal=True):
        for model in models:
            st.button(f"Decode with {weights_label(model)}", key=f"decode_with_{model}", on_click=use_weights,
                      args=(model,))
    st.stop()
st.caption(f"The sidebar's model: **{weights_label(name)}**" + (f", {config.architecture}, {config.norm}-norm"
                                                              if prompting else "") + " (change it in the sidebar).")
if outside:
    example = " ".join(config.source_text.splitlines()[0].split()[:4]) or "1 2 3"
elif model_config.supports().language:
    example = REAL_PROMPT  # a fact it knows: " Paris" (docs/real_model.md)
elif prompting and not trained:
    example = " ".join(config.target_text.splitlines()[0].split()[:4]) or "1 2 3"
else:
    task = task_of(name)
    # read off the task (no model loads on this thread); the dates model reads today's date, as on Home
    example = date_text(datetime.date.today(), "weekday") if task == "dates" else get_task(task).prompt


def _from_the_start() -> None:
    """A new source is decoded from its first step, not played on."""
    state.update(dec_step=0, dec_play=False)


source = st.text_input("Prompt" if prompting else "Source", key=F.dec_src, placeholder=example, max_chars=400,
                       on_change=_from_the_start, help="One line in the model's own tokens; empty: the example "
                       "shown.", **PERSIST) or example
settings = st.columns(5)
mode = settings[0].radio("Choice", choices.DECODE_MODES, key=F.dec_mode, horizontal=True, **PERSIST)
temperature = settings[1].select_slider("Temperature", choices.TEMPERATURES, key=F.dec_temp, **PERSIST,
                                        help="The distribution is softmax(logits / temperature).")
top_k = settings[2].select_slider("Top-k (sampling)", choices.TOP_KS, key=F.dec_top_k, disabled=mode == "greedy",
                                  format_func=lambda k: "all" if k == 0 else str(k), **PERSIST)
top_p = settings[3].select_slider("Top-p (sampling)", choices.TOP_PS, key=F.dec_top_p, disabled=mode == "greedy",
                                  format_func=lambda p: "all" if p == 1.0 else str(p), **PERSIST,
                                  help="Nucleus sampling: the fewest most probable tokens whose probabilities reach "
                                  "p (after top-k).")
seed = settings[4].number_input("Seed (sampling)", min_value=0, max_value=2**31 - 1, key=F.dec_seed,
                                disabled=mode == "greedy", **PERSIST)
run = data.decode(config, source, sample=mode == "sampled", temperature=float(temperature), top_k=int(top_k),
                  top_p=float(top_p), seed=int(seed))
last = len(run.steps) - 1
clamp(F.dec_step, last)
if mode == "sampled" and top_k >= len(run.vocabulary):
    settings[2].caption(f"Top-k {top_k} is at least the vocabulary ({len(run.vocabulary)} tokens): it keeps every "
                        "token.")


def _to_step(index: int) -> None:
    state.put(F.dec_step, min(max(0, index), last))


def _on_play() -> None:
    """Play at the last step plays again from the first."""
    if state.get(F.dec_play) and state.read(F.dec_step) >= last:
        state.put(F.dec_step, 0)


if state.get(F.dec_play) and state.read(F.dec_step) >= last:  # played to the end: Play goes off
    state.put(F.dec_play, False)


def step_caption(index: int) -> list[tuple[str, str]]:
    """What step ``index`` reads and chooses, and the whole answer: the step control's caption."""
    step = run.steps[index]
    whole = ([("continuation: ", ""), (run.prediction, "code")] if prompting else
             [("answer: ", ""), (run.prediction, "code"), (" · expected: ", ""),
              (run.expected if run.expected is not None else "—", "code")])
    return [(f"Step {index}", "b"), (" — the decoder has read ", ""), (" ".join(step.prefix), "code"),
            (" and chooses ", ""), (step.chosen, "b code"), (" · ", ""), *whole]


# Every step's charts are sent at once: the step control redraws them in the browser (ui.stepper), and the page's
# run that follows sends the same (each step's figure is built once: `identity` is what they depend on).
t = state.read(F.dec_step)
class_room.offer("decode", class_room.next_asked(run, t))  # a teacher's Ask the class: what will it write next?
identity = (config, source, mode, float(temperature), int(top_k), float(top_p), int(seed))
steps = st.columns([8, 2], vertical_alignment="center")
with steps[0]:
    stepper("dec", t, [str(index) for index in range(last + 1)], [step_caption(i) for i in range(last + 1)],
            on_step=_to_step)
playing = steps[1].toggle("Play", key=F.dec_play, on_change=_on_play, help="Step forward once a second; off at the "
                          "last step (on again: from the first).", **PERSIST)
final = run.steps[-1]


def position_of(index: int) -> int:
    """The newest position at step ``index``: the prompt's last token and the ones chosen after it."""
    return len(run.steps[index].prefix) - 1


def plot_step(key: str, figure_of, *depends_on) -> None:
    plot_steps(key, "dec", t, last + 1, (*identity, *depends_on), figure_of)


plot_step("dec_look_ahead", lambda i: look_ahead_row(position_of(i), len(final.prefix),
                                                     final.prefix + (final.chosen,)))
st.caption("The newest position's row of the look-ahead mask: it sees itself and the earlier ones (blue).")
columns = st.columns([3, 2])
with columns[0]:
    plot_step("dec_self", lambda i: step_attention(run.steps[i].self_attention, run.steps[i].prefix,
                                                   f"masked self-attention of position {position_of(i)}",
                                                   fit_px=fit_px("dec_self")), fit_px("dec_self"))
    if final.cross_attention is not None:
        plot_step("dec_cross", lambda i: step_attention(run.steps[i].cross_attention, run.source_tokens,
                                                        f"cross-attention of position {position_of(i)}",
                                                        fit_px=fit_px("dec_cross")), fit_px("dec_cross"))
    else:
        st.caption("No cross-attention: a decoder-only model has no encoder to look at.")
with columns[1]:
    # two lines: a long one ran under the chart's tool bar in this narrow column
    title = f"next token<br>temperature {temperature}" + (f", top {top_k}" if mode == "sampled" and top_k else "") \
        + (f", top-p {top_p}" if mode == "sampled" and top_p < 1 else "")
    plot_step("dec_distribution", lambda i: distribution(run.steps[i].top(run.vocabulary, 10), run.steps[i].chosen,
                                                         title))
if outside:
    st.caption("Your model ran whole on the prefix at each step: this page keeps no key/value cache for it.")
    st.stop()
st.subheader("Key/value cache")
st.markdown(f"**{run.cache_bytes / 1024:.1f} KB** for {count(run.layers, 'layer')} at the last step. Decoding with the "
            "cache (the new positions run alone, attending to the keys and values kept for the earlier ones: here the "
            "prompt, then the tokens chosen) gives logits that differ from recomputing the whole prefix at each step "
            f"by at most **{run.cache_gap:.1e}**.")
cache_columns = st.columns([1, 4])
clamp(F.dec_cache_layer, run.layers - 1)
options_follow(F.dec_cache_layer, range(run.layers))
layer = cache_columns[0].selectbox("Layer", list(range(run.layers)), key=F.dec_cache_layer, **PERSIST)
cache_columns[0].caption(f"Each step adds one position's keys and values per layer and key/value head "
                         f"({run.kv_heads} of {run.heads} heads × d_k × 2 × 4 bytes)"
                         + ("; the source's keys and values for cross-attention are computed once." if not prompting
                            else "; the prompt's are computed in the first step."))
with cache_columns[1]:
    plot_step("dec_cache", lambda i: cache_heatmaps(run.cache[layer], position_of(i), len(run.source_tokens),
                                                    f"layer {layer}: K and V after step {i}<br>keys and values "
                                                    "kept, a panel a key/value head"), layer)


@st.fragment(run_every=1.0 if playing and t < last else None)
def _player() -> None:
    """While Play is on: one step forward a second (the whole page reruns to draw it)."""
    if state.get(F.dec_play) and state.read(F.dec_step) < last:
        _to_step(state.read(F.dec_step) + 1)
        st.rerun()


_player()
