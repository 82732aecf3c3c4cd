"""The Weights choice: the models a session may pick, how each is named, and what picking one changes (the lines
its tokens need, its own architecture and sizes). Pages offer a model through `use_weights`, as the list does."""

from __future__ import annotations

from transformer.service import (
    EXTERNAL_EXAMPLE,
    EXTERNAL_LENGTH,
    RANDOM,
    available,
    dropped,
    get_task,
    kept_label,
    missing_reason,
    real_models,
    source_of,
    spec_of,
    task_of,
)
from ui import external_model, model_config, state
from ui.state import F


def weight_choices() -> list[str]:
    """The Weights list: random weights, the shipped models, the real language models installed here, this
    session's trained ones and its models from outside (the one in use among them)."""
    current = state.value(F.weights)
    yours = list(state.get(external_model.EXTERNAL_MODELS, {})) + \
        ([current] if model_config.supports(current).outside else [])
    return [RANDOM] + available() + real_models() + list(state.get(state.MY_MODELS, [])) + list(dict.fromkeys(
        yours))


def open_linked_model() -> None:
    """A link to a model trained on this server (in any session) opens it while the server keeps it; one it has
    dropped to make room is said plainly and offered to train again (`retrain_offer`); the weights are the random
    ones."""
    name = state.value(F.weights)
    if not source_of(name).trained_here or name in state.get(state.MY_MODELS, {}):
        return
    label = kept_label(name)
    if label is not None:
        state.setdefault(state.MY_MODELS, {})[name] = label
        return
    state.fall_back_to_random()
    gone = dropped(name)
    if gone is not None:
        state.put(state.RETRAIN, gone[1])
    offer = " “Train it again” (in the sidebar) trains the same model again." if gone is not None else ""
    state.notify(f"{missing_reason(name)} Using random weights for now.{offer}")


def weights_label(name: str) -> str:
    if model_config.source(name).title() is not None:
        return model_config.source(name).title()
    if model_config.supports(name).shape:
        return "Seeded random weights"
    if model_config.supports(name).outside:
        return external_model.label(name)
    if source_of(name).trained_here:
        return session_model_label(name, state.get(state.MY_MODELS, {}))
    return f"Trained: {name}"


def session_model_label(name: str, labels: dict) -> str:
    """A model trained on this server, short enough for the Weights box: its task and its place among this
    session's models ("Trained here: reverse #2"); its sizes are in the locked caption below the box."""
    task = labels.get(name, name).split(",")[0]
    same_task = [other for other, label in labels.items() if label.split(",")[0] == task]
    return f"Trained here: {task} #{same_task.index(name) + 1}" if name in same_task else f"Trained here: {task}"


def use_weights(name: str) -> None:
    """Make ``name`` the sidebar's model, as choosing it under Weights does (a button's callback)."""
    state.put(F.weights, name)
    after_change()


def after_change() -> None:
    """A trained model reads its own tokens: swap in its task's example if the source text has others, and
    make the sequence length the model's own where the current one would cut its sources."""
    name = state.read(F.weights)
    if model_config.supports(name).outside:
        if name in state.get(state.EXTERNAL_ARCHITECTURES, {}):
            state.put(F.arch, state.read(state.EXTERNAL_ARCHITECTURES)[name])
        state.update(src=EXTERNAL_EXAMPLE, seq_len=EXTERNAL_LENGTH, ablate=[])
        return
    if state.get(F.arch) in ("decoder-only", "encoder-only") and \
            model_config.supports(state.get(state.LAST_WEIGHTS, "")).outside:
        state.put(F.arch, "encoder-decoder")  # back from a model from outside's one stack
    if model_config.supports(name).shape:
        return
    if model_config.source(name).task() is None:  # a real language model: any text is its lines
        _own_lines_and_shape(name)
        return
    task, spec = get_task(task_of(name)), spec_of(name)  # read, not loaded: no TensorFlow here
    if not _reads(task, state.value(F.src)):
        state.put(F.src, task.example)
        state.notify(f"The {spec.task} model reads other tokens: the source text now holds its example.")
    state.put(F.seq_len, max(state.value(F.seq_len), state.default_of(F.seq_len, name)))
    own = dict(kv_heads=state.FIELDS[F.kv_heads].default, **state.trained_options(name))  # one KV head per head
    if any(state.value(key) != value for key, value in own.items()):
        state.update(own)
        state.notify(f"The {spec.task} model is an {spec.architecture} with {spec.norm}-norm, {spec.positions} "
                     "positions and a key/value head per head: the Architecture, Norm, Positions and KV heads "
                     "controls are back at its own.")


def _own_lines_and_shape(name: str) -> None:
    """A real language model: its own architecture, norm and positions, its example in the target box where that
    holds the lab's toy lines, a length that holds the example, and no ablated heads."""
    own = state.trained_options(name)
    example, length = model_config.source(name).default_lines(state.FIELDS[F.seq_len].default)
    if state.value(F.tgt) == state.FIELDS[F.tgt].default:
        own[F.tgt] = example
    state.update(own, seq_len=max(state.value(F.seq_len), length), ablate=[])


def _reads(task, text: str) -> bool:
    """Whether every line of ``text`` is made of ``task``'s tokens."""
    vocabulary = task.vocabulary()
    try:
        return all(vocabulary.encode(task.source_tokens(line)) for line in text.splitlines() if line.strip()) \
            and bool(text.strip())
    except ValueError:
        return False
