"""Train: a small Transformer learns a task here, then its attention can be explored on every page."""

import dataclasses

import streamlit as st

from transformer.service import (
    IMAGE_TASKS,
    TASKS,
    VISION_DEFAULTS,
    TrainSpec,
    kept_label,
    quick_spec,
    source_of,
    spec_of,
)
from ui import data, openings, state, training, weights
from ui.controls import plot
from ui.pages import Page
from ui.state import F
from ui.text import as_text
from ui.training_timeline import draw_timeline, timeline_view
from viz.training import progress_figure

openings.show("train")
openings.how("Training follows the paper at this size: Adam (β1 0.9, β2 0.98, ε 1e-9) with the warm-up schedule, "
             "label smoothing 0.1, teacher forcing behind a start symbol, padding left out of the loss; "
             "predictions are greedy. The induction task trains a decoder-only, attention-only model on next tokens "
             "instead (Adam at 3e-3); the image tasks (match, digits) train a Vision Transformer (Adam at 1e-3) whose "
             "attention the Images page draws. It runs in a training process of its own, in turn with the other "
             "sessions' jobs: the app stays usable meanwhile, and the timeline below shows every head's role forming.")

def form_defaults(task: str) -> dict:
    """The form's sizes and steps for ``task``: the shipped image models' settings (docs/trained_models.md), else
    the engine's quick run of it (`quick_spec`), under the form's names (`state.SHAPE_FIELDS`)."""
    spec = VISION_DEFAULTS[task] if task in IMAGE_TASKS else quick_spec(task)
    return {**{field: getattr(spec, name) for field, name in state.SHAPE_FIELDS.items()
               if field in ("d_model", "heads", "layers", "d_ff")}, "steps": spec.steps}


# The whole width: each task's description is a sentence (in a quarter of the form it was cut off). Outside the
# form, so that choosing a task sets the form to that task's own settings.
DESCRIPTIONS = {name: rules.description for name, rules in {**TASKS, **IMAGE_TASKS}.items()}
task = st.selectbox("Task", list(DESCRIPTIONS), format_func=lambda t: f"{t} — {DESCRIPTIONS[t]}",
                    key=state.TRAIN_TASK)
image_task = task in IMAGE_TASKS
st.caption("A Vision Transformer of the sizes below: once trained, the Images page's Model picker lists it, for this "
           "session and any that opens its link. It has no timeline: the heads' roles it scores are roles among "
           "tokens of a line, not patches." if image_task else
           "The sizes below are the model this training makes, not the sidebar's (those shape the random-weights "
           "model of the other pages). Once trained, Weights → Trained here opens it on every page, with these sizes "
           "shown locked in the sidebar.")
own = form_defaults(task)
free_length = not image_task and not TASKS[task].own_lengths  # dates and translate draw sources of their own
with st.form(f"train_form_{task}"):
    cols = st.columns(4)
    d_model = cols[0].select_slider("d_model", [16, 32, 64, 128], value=own["d_model"], key=f"train_d_model_{task}")
    heads = cols[1].select_slider("Heads", [1, 2, 4, 8], value=own["heads"], key=f"train_heads_{task}")
    layers = cols[2].select_slider("Layers", [1, 2, 3], value=own["layers"], key=f"train_layers_{task}")
    d_ff = cols[3].select_slider("d_ff", sorted({0, 32, 64, 128, 256, 512}), value=own["d_ff"],
                                 format_func=lambda width: "0 (none)" if width == 0 else str(width),
                                 key=f"train_d_ff_{task}")
    cols = st.columns(4)
    steps = cols[0].number_input("Steps", min_value=10, max_value=6000, value=own["steps"], step=100,
                                 key=f"train_steps_{task}")
    seed = cols[1].number_input("Seed", min_value=0, max_value=10_000, value=0, key=f"train_seed_{task}")
    if image_task:
        cols[2].caption("Images: 8×8, 16 patches of 2×2 pixels and CLS; " + (
            "fresh ones every step." if task == "match" else "the 1,497 training digits, shifted by up to a pixel."))
    elif free_length:
        min_len, max_len = cols[2].slider("Source lengths", 1, 12, (3, 8), key="train_lengths")
    else:
        lengths = TrainSpec.for_task(task)
        min_len, max_len = lengths.min_len, lengths.max_len
        cols[2].caption(f"Sources: the task's own, {min_len}–{max_len} tokens.")
    submitted = st.form_submit_button("Train", type="primary")

if image_task:  # the form's values (as last submitted): what Train makes, and how long it takes here
    spec = dataclasses.replace(VISION_DEFAULTS[task], d_model=d_model, num_heads=heads, num_layers=layers, d_ff=d_ff,
                               steps=int(steps), seed=int(seed))
else:
    spec = TrainSpec.for_task(task, d_model=d_model, num_heads=heads, d_ff=d_ff, num_layers=layers,
                              steps=int(steps), min_len=min_len, max_len=max_len, seed=int(seed), warmup=100)
st.caption(training.estimate_line(spec))
if submitted:
    try:
        training.submit(spec)
    except ValueError as error:  # a bad spec, a job of this session's still running, or a full queue
        st.warning(str(error))


def _keep_and_link(job) -> None:
    """A finished model is kept (every session's, on disk too) and named in the link at once: a teacher who copies
    the link before pressing Explore keeps the model (the sidebar picks it on the next run)."""
    name = training.register(job)
    field = "img_model" if training.is_image_job(job) else "weights"
    if state.get(field) == name:
        return
    state.setdefault(state.MY_IMAGES if training.is_image_job(job) else state.MY_MODELS, {})[name] = training.label(job)
    state.put_next_run(**{field: name})
    st.rerun()


def _use_model(job) -> None:
    name = training.register(job)
    if training.is_image_job(job):  # the Images page, on the task's first image
        state.setdefault(state.MY_IMAGES, {})[name] = training.label(job)
        state.open_page(Page.IMAGES.file, img_model=name, img_pick=0, img_flip=[], img_from=0)
        return
    state.setdefault(state.MY_MODELS, {})[name] = training.label(job)
    weights.use_weights(name)  # its own architecture, norm and positions with it, as the Weights list does
    state.put(F.src, TASKS[job.spec.task].example)
    state.put(F.seq_len, max(state.value(F.seq_len), job.spec.max_len))
    # the picture the task's description promises ("cross-attention should be diagonal", induction): its last layer
    stack = "decoder" if job.spec.architecture == "decoder-only" else "cross"
    state.open_page(Page.ATTENTION.file, stack=stack, layer=job.spec.num_layers - 1, element=0, focus=-1)


def _image_measure(task: str) -> str:
    return "Accuracy on 1,000 fresh images" if task == "match" else "Accuracy on the 300 test digits it never saw"


def progress(job, timed: bool) -> None:
    """The job's progress; its Stop button while it runs, its result and Explore once it ended and ``timed`` is
    False (a run on the progress timer draws no Explore: `training.while_running`)."""
    if job is None:
        st.info("Choose a task and press Train.")
        return
    finished = job.finished  # one look: a job may end while this draws
    st.progress(min(1.0, job.step / job.spec.steps), text=training.status_line(job))
    if job.history:
        plot(progress_figure(job.history), "train_progress")
    if not finished:  # pressed, it stays in its place, disabled: the status line says the job is stopping
        st.button("Stop", on_click=training.stop, args=(job,), disabled=job.stop_requested)
    if not finished or timed:
        return
    if job.status == "failed":
        st.error(f"Training failed: {as_text(job.error)}")
        return
    if job.trained is None:
        st.info("Stopped before it started: nothing was trained.")
        return
    _keep_and_link(job)
    measure = _image_measure(job.spec.task) if training.is_image_job(job) else \
        "Next-token accuracy on a repeated segment" if job.spec.architecture == "decoder-only" else \
        f"Exact-sequence accuracy (whole answer right, decoded greedily; lengths {job.spec.min_len}–" \
        f"{job.spec.max_len}) on fresh inputs"
    st.success(f"{measure}: {job.trained.accuracy:.1%} ({job.trained.seconds:.0f} s of training).")
    st.button("Explore this model's attention", type="primary", on_click=_use_model, args=(job,))
    state.follow_open_page()  # the fragment's own rerun after the click


state.follow_open_page()  # a whole-page rerun that took the click (a full deploy run once stayed on this page)


def progress_and_timeline(job, timed: bool) -> None:
    progress(job, timed)
    timeline_view(job)


# One timed fragment, not one for the progress and one for the timeline: when the job ended, one fragment's
# st.rerun() crossed the other's timer tick in flight and the browser stayed "running" for good with no message
# going either way (the timeline's browser test, 2 full runs in 7; the test now says so when it happens).
training.while_running(progress_and_timeline, state.get(training.JOB), 1.0)
kept = state.value(F.weights)
if state.get(training.JOB) is None and source_of(kept).trained_here:  # opened by its link
    shots = data.timeline_of(kept)
    if shots:
        draw_timeline(shots, kept, spec_of(kept), f"Attention over training of {kept_label(kept) or kept}")
