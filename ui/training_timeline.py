"""The Train page's attention over training: loss, accuracy and every head's role score against the step, and a step
control that scrubs the probe line's head grid through training in the browser (`transformer.training.timeline`)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import streamlit as st

from transformer.service import PROBE_LINES
from ui import state
from ui.controls import PERSIST, options_follow, plot, plot_steps
from ui.state import F
from ui.stepper import stepper
from viz.attention import model_view
from viz.heads import ROLE_TITLES
from viz.training import timeline_figure


def snapshot_caption(loss: float, accuracy: float, measure: str) -> str:
    """``"loss 0.412 · token accuracy 0.87"``; a snapshot taken before the first step has no loss yet, and says so
    (never "nan")."""
    if not np.isfinite(loss):
        return f"no loss yet (before the first step) · {measure} {accuracy:.2f}"
    return f"loss {loss:.3f} · {measure} {accuracy:.2f}"


def formed_at(steps, scores, threshold: float = 0.5) -> int | None:
    """The first step at which some head's score ``(T, L, H)`` reaches ``threshold``; None when none does."""
    if not len(steps):  # only step 0 so far
        return None
    reached = np.flatnonzero(np.nanmax(np.asarray(scores, np.float64).reshape(len(steps), -1), axis=1) >= threshold)
    return int(steps[reached[0]]) if reached.size else None


def task_role(stacks: list) -> tuple[str, str]:
    """The stack and role a run's task is about: a sequence-to-sequence task's cross-attention alignment, else the
    decoder's induction heads."""
    return ("cross", "alignment") if "cross" in stacks else ("decoder", "induction")


def _nearest(value: int, steps: list[int]) -> int:
    return min(steps, key=lambda step: abs(step - value))


def snapshot_grid(shot, stack: str, title: str):
    """The model view of ``shot``'s probe line in ``stack`` (at most 64 positions a side)."""
    patterns = shot.patterns[stack]  # (L, H, N_q, N_k)
    n_q, n_k = patterns.shape[-2:]
    mask = np.tril(np.ones((n_q, n_k), bool)) if stack == "decoder" else np.ones((n_q, n_k), bool)  # (N_q, N_k)
    return model_view(patterns, mask, title, limit=64)


def timeline_view(job) -> None:
    """The timeline of ``job`` (a `transformer.training.pool.Job`); the Train page redraws it while it trains."""
    if job is None or not job.timeline:
        return
    # the pool's thread appends: one consistent copy per draw
    draw_timeline(list(job.timeline), job.key, job.spec, every_grid=job.finished)


def draw_timeline(shots: list, key: str, spec, title: str = "Attention over training", every_grid: bool = True) -> None:
    """Loss, accuracy and role scores against the step of ``shots`` (`Snapshot`s of the run ``key`` with ``spec``),
    and the step control's head grid: every step's, scrubbed in the browser, or (``every_grid`` False: a running
    job's page, redrawn every second) the shown step's alone."""
    job = SimpleNamespace(key=key, spec=spec)
    st.subheader(title)
    stacks = list(shots[0].scores)
    steps = [shot.step for shot in shots]
    columns = st.columns([1, 1, 3])
    if state.get(state.TIMELINE_JOB) != job.key:  # a new run opens on the heads its task is about
        state.update({state.TIMELINE_JOB: job.key, **dict(zip((F.tl_stack, F.tl_role), task_role(stacks)))})
    if state.get(F.tl_stack) not in stacks:
        state.put(F.tl_stack, stacks[-1])
    options_follow(F.tl_stack, stacks)
    stack = columns[0].selectbox("Stack", stacks, key=F.tl_stack, help="The stack whose heads are scored: "
                                 "self-attention on token roles, cross-attention on the task's alignment.", **PERSIST)
    roles = list(shots[0].scores[stack])
    if state.get(F.tl_role) not in roles:
        state.put(F.tl_role, roles[0])
    options_follow(F.tl_role, roles)
    role = columns[1].selectbox("Role", roles, key=F.tl_role, format_func=ROLE_TITLES.get, **PERSIST,
                                help="TransformerLens's detection patterns (self-attention), or the weight on the "
                                "source token each output comes from (cross-attention), on the same probe lines at "
                                "every snapshot.")
    chosen = state.value(F.tl_step)
    following = chosen < 0 or chosen == state.get(state.TIMELINE_LATEST)  # at the latest: stay there as it grows
    state.put(F.tl_step, steps[-1] if following else _nearest(chosen, steps))
    state.put(state.TIMELINE_LATEST, steps[-1])
    index = steps.index(state.get(F.tl_step))
    losses, accuracies = [shot.loss for shot in shots], [shot.accuracy for shot in shots]
    measure = shots[-1].measure
    with columns[2]:  # scrubs the head grid (and the timeline's marker) in the browser: ui.stepper
        captions = [[(snapshot_caption(loss, accuracy, measure), "")] for loss, accuracy in zip(losses, accuracies)]
        stepper("tl", index, [str(step) for step in steps], captions,
                on_step=lambda moved: state.put(F.tl_step, steps[moved]))
    scores = np.stack([shot.scores[stack][role] for shot in shots])  # (T, L, H)
    # every snapshot's figures are sent: the identity names what each depends on (the run, and its length for the
    # timeline, whose curves grow), so each is built once
    plot_steps("train_timeline", "tl", index, len(steps), (job.key, stack, role, len(steps), losses[-1]),
               lambda i: timeline_figure(steps, losses, accuracies, scores, role, steps[i], measure))
    formed = formed_at(steps[1:], scores[1:])
    spec = job.spec
    st.caption(f"{len(shots)} snapshots of {spec.steps} steps on {PROBE_LINES} fixed probe lines of lengths "
               f"{spec.min_len}–{spec.max_len} (the run's own); its {measure} counts each token, so it "
               "is not the exact-sequence accuracy above, which counts whole answers decoded greedily. " + (
        f"A head's {ROLE_TITLES[role]} score first reached 0.5 at step {formed}." if formed is not None else
        f"No head's {ROLE_TITLES[role]} score has reached 0.5 yet."))
    name = "cross-attention" if stack == "cross" else f"{stack} self-attention"
    grid_of = lambda i: snapshot_grid(shots[i], stack, f"{name} of the probe's first line at step {steps[i]}")  # noqa: E731
    if every_grid:
        plot_steps("train_timeline_grid", "tl", index, len(steps), lambda i: (job.key, stack, steps[i], losses[i]),
                   grid_of)
    else:  # a grid is ~0.3 MB (every head of the probe line): all of them each second, the browser fell behind
        plot(grid_of(index), "train_timeline_grid")
    state.write_url()  # a fragment's rerun does not reach app.py, which writes the link after a whole run
