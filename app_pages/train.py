"""Train: a small Transformer learns a task here, then its attention can be explored on every page."""

import streamlit as st

from transformer.tasks import TASKS
from transformer.train import TrainSpec
from ui.controls import plot
from ui.training import TrainJob
from viz.training import progress_figure

st.title("Train a model")
st.markdown("Training follows the paper at this size: Adam (β1 0.9, β2 0.98, ε 1e-9) with the warm-up schedule, "
            "label smoothing 0.1, teacher forcing behind a start symbol, padding left out of the loss; "
            "predictions are greedy. It runs in the background: the app stays usable meanwhile.")

with st.form("train_form"):
    # The whole width: each task's description is a sentence (in a quarter of the form it was cut off).
    task = st.selectbox("Task", list(TASKS), format_func=lambda t: f"{t} — {TASKS[t].description}",
                        key="train_task")
    cols = st.columns(4)
    d_model = cols[0].select_slider("d_model", [16, 32, 64], value=32, key="train_d_model")
    heads = cols[1].select_slider("Heads", [1, 2, 4], value=2, key="train_heads")
    layers = cols[2].select_slider("Layers", [1, 2, 3], value=1, key="train_layers")
    d_ff = cols[3].select_slider("d_ff", [32, 64, 128, 256], value=128, key="train_d_ff")
    cols = st.columns(4)
    steps = cols[0].number_input("Steps", min_value=10, max_value=5000, value=600, step=100, key="train_steps")
    seed = cols[1].number_input("Seed", min_value=0, max_value=10_000, value=0, key="train_seed")
    min_len, max_len = cols[2].slider("Source lengths", 1, 12, (3, 8), key="train_lengths")
    submitted = st.form_submit_button("Train", type="primary")

if submitted:
    previous = st.session_state.get("_train_job")
    if previous is not None and not previous.finished:
        st.warning("A model is still training in this session: stop it or wait for it first.")
    else:
        spec = TrainSpec(task=task, d_model=d_model, num_heads=heads, d_ff=d_ff, num_layers=layers,
                         steps=int(steps), min_len=min_len, max_len=max_len, seed=int(seed), warmup=100)
        try:
            st.session_state["_train_job"] = TrainJob(spec, st.session_state.get("device", "auto")).start()
        except ValueError as error:
            st.error(str(error))


def _use_model(job: TrainJob) -> None:
    name = job.register()
    st.session_state.setdefault("_my_models", {})[name] = job.label()
    st.session_state["weights"] = name
    st.session_state["src"] = "a b c d e\nj i h g\nc a b e"


@st.fragment(run_every=1.0)
def progress() -> None:
    job = st.session_state.get("_train_job")
    if job is None:
        st.info("Choose a task and press Train.")
        return
    st.progress(min(1.0, job.step / job.spec.steps), text=f"{job.status}: step {job.step} of {job.spec.steps}")
    if job.history:
        plot(progress_figure(job.history), "train_progress")
    if not job.finished:
        st.button("Stop", on_click=job.stop)
        return
    if job.status == "failed":
        st.error(f"Training failed: {job.error}")
        return
    st.success(f"Exact-sequence accuracy on fresh inputs: {job.result.accuracy:.1%} "
               f"({job.result.seconds:.0f} s of training).")
    if st.button("Explore this model's attention", type="primary", on_click=_use_model, args=(job,)):
        st.switch_page("app_pages/attention.py")


progress()
