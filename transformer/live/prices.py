"""What each engine call of the door (`transformer.service`) will cost, before it runs: one price function per call,
given the call's own arguments by name (`price_of` binds them to the call's signature, defaults filled in), returning
a `RunCost` (FLOPs, model calls, peak bytes, work that is not arithmetic) of the whole request — every chunk of a
roles study, every line of a faithfulness score, every head of a measure, every step of a decode, every site of a
patching map. A model is priced from its own shape (`model_shape`), never the sidebar's. A price reads what the
call would read (the lines, a model's kept spec) but runs no model, except where reading a trained model's lines
is its answer (`reading`): that is the price's own, small, cost.
"""

from __future__ import annotations

import math

from transformer.core import tokens
from transformer.core.shape import ModelShape
from transformer.live.config import PROMPT_STEPS, ROLES_MAX_LINES, VOCAB_SIZE, LiveConfig
from transformer.live.run_cost import TRACED_CALL_SECONDS, RunCost, live_cost
from transformer.live.sources import source_of

ROLES_CHUNK = tokens.MAX_LINES  # lines of a roles study run at a time (`transformer.live.head_roles`)
FLOW_SECONDS_PER_CELL = 3e-4  # attention flow's max-flow solves, per (source token × output token) of an example:
# measured, 20 dates examples scored in 4.8 s on 2 cores, flow under half of it
DECODE_STEP_SECONDS = TRACED_CALL_SECONDS  # one greedy step (the dates model, 1–16 lines: 4.3–5.8 ms measured)
ROLE_SCORE_SECONDS_PER_CELL = 2e-8  # role scores in NumPy, per attention cell (L·B·H·N²): the induction study's 500
# lines took 2.2–2.9 s on 2 cores against 0.6–1.7 s of passes estimated (its model's first load included)
QUERY_KEY_FACTOR = 3  # a query–key plane over a run's forward pass: measured 2.8× (16 lines, N = 512)
LOAD_BYTES_PER_SECOND = 200e6  # reading a model from outside off disk into Keras, 2 cores
NOTHING = RunCost(0.0, 0, "nothing to compute", 0)


def model_shape(weights: str, config: LiveConfig | None = None) -> tuple[ModelShape, int]:
    """``(shape, vocabulary size)`` of the model ``weights`` names, as it runs: its own (a trained model's spec, a
    model from outside's layers, heads and width), or ``config``'s for random weights."""
    return source_of(weights).priced_shape(config)


def _shape(config: LiveConfig) -> dict:
    shape, vocab = model_shape(config.weights, config)
    return dict(shape=shape, vocab=vocab)


def _lines(config: LiveConfig, side: str = "source") -> int:
    text = config.source_text if side == "source" else config.target_text
    return max(1, len(text.splitlines()))


def _longest(config: LiveConfig) -> int:
    """The length the model runs its lines at: the sequence length (every line is padded to it)."""
    return config.seq_len


def decoding(shape: ModelShape, vocab: int, lines: int, n_source: int, steps: int, what: str) -> RunCost:
    """``steps`` greedy steps over ``lines`` lines, each step a forward pass of its prefix (at most ``n_source`` +
    ``steps`` tokens: an upper bound that a key/value cache only lowers) in a traced call of its own
    (`DECODE_STEP_SECONDS`), after one call that encodes the source."""
    config = LiveConfig()
    flops = sum(live_cost(config, lines, n_source, step, shape=shape, vocab=vocab).flops
                for step in range(1, steps + 1))
    one = live_cost(config, lines, n_source, steps, shape=shape, vocab=vocab)
    return RunCost(flops, one.bytes, what, 1, steps * DECODE_STEP_SECONDS)


def reading(config: LiveConfig) -> RunCost:
    """Reading ``config``'s lines: a trained model answers them (a greedy decode of each, or one pass of next
    tokens); other models' lines are only tokenised."""
    source = source_of(config.weights)
    if not source.supports.predictions:
        return NOTHING
    shape, vocab = model_shape(config.weights, config)
    lines, n = _lines(config), _longest(config)
    if shape.architecture == "decoder-only":
        return live_cost(config, lines, n, n, shape=shape, vocab=vocab).said(f"reading {lines} lines")
    return decoding(shape, vocab, lines, n, _answer_steps(config, n), f"answering {lines} lines")


def _answer_steps(config: LiveConfig, n: int) -> int:
    """A trained model's greedy steps for ``config``'s lines: its task's answer to the longest line (in characters,
    the most tokens it can be), and </s>; the whole length when its task is unknown."""
    from transformer.tasks import get_task  # noqa: PLC0415

    task = source_of(config.weights).task()
    longest = max((len(line) for line in config.source_text.splitlines()), default=1)
    return (get_task(task).target_length(min(n, longest)) if task else n) + 1


def _forward(config, stacks, lines) -> RunCost:
    """One model call over the lines asked for (every line: None) at the sequence length; nothing when no stack is
    drawn (the model does not run)."""
    drawn = [stack for stack in (stacks or ()) if stack in config.stacks]
    if not drawn:
        return NOTHING.said("no model run")
    count = _lines(config, "target" if config.architecture == "decoder-only" else "source")
    count = min(count, tokens.MAX_LINES) if lines is None else len(lines)
    return live_cost(config, count, **_shape(config)) + load_model(config.weights, config.device)


def run_live(config, stacks, lines, **_) -> RunCost:
    """The forward pass, and reading the lines (a trained model answers them)."""
    return _forward(config, stacks, lines) + reading(config)


def read_lines(config, **_) -> RunCost:
    return reading(config)


def run_cost(config, **_) -> RunCost:
    """Pricing a run reads its lines (a trained model answers them)."""
    return reading(config)


def line_count(**_) -> RunCost:
    return NOTHING.said("counting the lines")


def sequence_lengths(config, **_) -> RunCost:
    return reading(config)


def _one_stack(config, stack, lines=None) -> RunCost:
    """A view of its page's run: the lines were read by that run (the plan is kept), only the pass is its own."""
    return _forward(config, (stack,), lines)


def attention_walkthrough(config, stack, **_) -> RunCost:
    return _one_stack(config, stack).said("one layer opened up, every line")


def keras_difference(config, stack, line, **_) -> RunCost:
    return _one_stack(config, stack, None if line is None else (line,)).times(2, "the Keras check of one line")


def score_terms(config, stack, line, **_) -> RunCost:
    return _one_stack(config, stack, (line,)).said("one line's score terms")


def value_norms(config, stacks, lines, **_) -> RunCost:
    return _forward(config, stacks, lines).said("value-weighted norms")


def query_key_space(config, stack, **_) -> RunCost:
    run = _one_stack(config, stack)
    return RunCost(run.flops * QUERY_KEY_FACTOR, run.bytes * 2, f"one head's queries and keys over {_lines(config)} "
                   "lines", run.calls * QUERY_KEY_FACTOR)


def head_roles(config, stack, **_) -> RunCost:
    """Every line (up to `transformer.live.head_roles.MAX_LINES`), `ROLES_CHUNK` lines a model call, and a trained
    model's answers to them."""
    count = min(len(config.source_text.splitlines()) or 1, ROLES_MAX_LINES)
    n = _longest(config)
    chunks = math.ceil(count / ROLES_CHUNK)
    run = live_cost(config, count, n, n, **_shape(config))
    run = RunCost(run.flops, run.bytes, f"head roles over {count} lines of {n} tokens", chunks)
    return run + reading(config).times(chunks)


def decode(config, text, max_steps, **_) -> RunCost:
    """A decode's every step, each a forward pass of its prefix; a trained model's answer length, a prompt's
    continuation (`PROMPT_STEPS`, a model from outside's `OUTSIDE_STEPS`) unless ``max_steps`` says."""
    from transformer.live.outside import OUTSIDE_STEPS  # noqa: PLC0415

    source = source_of(config.weights)
    shape, vocab = model_shape(config.weights, config)
    prompt = max(1, min(config.seq_len, max(len(text.split()), len(text) if source.supports.predictions else 0)))
    default = OUTSIDE_STEPS if source.supports.outside else PROMPT_STEPS
    if source.supports.predictions and shape.architecture != "decoder-only":
        default = prompt + 1
    steps = default if max_steps is None else max(1, int(max_steps))
    n_source = prompt if shape.architecture != "decoder-only" else 0
    start = 0 if shape.architecture != "decoder-only" else prompt
    flops, peak = 0.0, 0
    for step in range(1, steps + 2):  # every step's prefix (an upper bound: the cache only lowers it), the check
        one = live_cost(config, 1, n_source or start + step, start + step, shape=shape, vocab=vocab)
        flops, peak = flops + one.flops, max(peak, one.bytes)
    return RunCost(flops, peak, f"decoding {steps} steps after {prompt} tokens", 2,
                   (steps + 1) * DECODE_STEP_SECONDS)  # each step a traced call, as an answer's


def _trained_lines(name: str) -> tuple[ModelShape, int, int, int]:
    """A trained model's ``(shape, vocabulary, source length, target length)`` at the longest of its task."""
    from transformer.tasks import get_task  # noqa: PLC0415

    shape, vocab = model_shape(name)
    longest = getattr(shape, "max_len", 32)
    task = getattr(shape, "task", "")
    answer = get_task(task).target_length(longest) if task else longest
    return shape, vocab, longest + 2, answer + 2


def measure_ablation(name, ablate, count, kind, seed, device, **_) -> RunCost:
    """One measure of a trained model: its loss over ``count`` examples (teacher forced) and a greedy decode of each
    for its accuracy, nothing when it is kept (`transformer.live.importance.is_kept`)."""
    from transformer.live.importance import is_kept  # noqa: PLC0415

    if is_kept(name, ablate, count, kind, seed, device):
        return NOTHING.said("a kept measure")
    shape, vocab, n_source, n_target = _trained_lines(name)
    loss = live_cost(LiveConfig(), count, n_source, n_target, shape=shape, vocab=vocab)
    means = loss if kind == "mean" else NOTHING
    return (loss + means + decoding(shape, vocab, count, n_source, n_target, "")).said(
        f"one ablation measured on {count} examples")


def head_importance(name, count, kind, seed, device, **_) -> RunCost:
    """Every head of ``name`` measured (those not kept yet), and the model as it is."""
    from transformer.live.importance import heads_of  # noqa: PLC0415

    heads = heads_of(name)
    total = NOTHING
    for ablate in [(), *((head,) for head in heads)]:
        total = total + measure_ablation(name, ablate, count, kind, seed, device)
    return total.said(f"{len(heads)} heads ablated in turn on {count} examples each")


def induction_study(count, weights, **_) -> RunCost:
    """``count`` lines read with their attention, then once with each group of heads ablated."""
    from transformer.live.induction import GROUPS  # noqa: PLC0415
    from transformer.tasks.induction import LINE_LENGTHS  # noqa: PLC0415

    shape, vocab = model_shape(weights)
    n = LINE_LENGTHS[1]
    one = live_cost(LiveConfig(seq_len=n), count, n, n, shape=shape, vocab=vocab)
    cells = shape.num_layers * count * shape.num_heads * n * n
    scores = RunCost(0.0, 4 * cells * 3, "", 0, cells * ROLE_SCORE_SECONDS_PER_CELL)
    return (one.times(len(GROUPS)) + scores).said(f"the induction study on {count} lines")


def faithfulness(name, count, seed, device, **_) -> RunCost:
    """Six methods scored on ``count`` examples: one pass for the maps, gradient × input per output token, every
    cross-attention head ablated, the deletion test's runs and attention flow's solves; nothing once kept."""
    from transformer.live.faithfulness import CHUNK, DELETED, METHODS, RANDOM_DRAWS, is_measured  # noqa: PLC0415

    if is_measured(name, count, seed, device):
        return NOTHING.said("kept scores")
    shape, vocab, n_source, n_target = _trained_lines(name)
    config = LiveConfig()
    one = live_cost(config, 1, n_source, n_target, shape=shape, vocab=vocab)
    rows = count * n_target
    maps = one.times(count).said("")
    gradients = RunCost(3 * one.flops * rows, one.bytes * min(rows, CHUNK), "", math.ceil(rows / CHUNK))
    heads = one.times(count * shape.num_layers * shape.num_heads).said("")
    deleted = rows * len(DELETED) * (len(METHODS) + RANDOM_DRAWS)
    deletions = RunCost(one.flops * deleted, one.bytes * CHUNK, "", math.ceil(deleted / CHUNK))
    flow = RunCost(0.0, 0, "", 0, extra_seconds=FLOW_SECONDS_PER_CELL * count * n_source * n_target)
    return (maps + gradients + heads + deletions + flow).said(f"six explanation methods scored on {count} examples")


def example_maps(name, count, seed, device, source_text, **_) -> RunCost:
    shape, vocab, n_source, n_target = _trained_lines(name)
    line = live_cost(LiveConfig(), 1, n_source, n_target, shape=shape, vocab=vocab).times(n_target + 4)
    return (faithfulness(name, count, seed, device) + line).said("one line's six maps")


def read_image(name, **_) -> RunCost:
    shape, vocab = model_shape(name)
    return live_cost(LiveConfig(seq_len=17), 1, 17, 17, shape=shape, vocab=vocab).said("one image read")


def patching_line(**_) -> RunCost:
    return RunCost(0.0, 0, "one example line drawn")


def patching_study(request, **_) -> RunCost:
    """Every site of the map, `transformer.analysis.patching.ROWS` patched runs a model call, and the two base
    runs; a path's site runs twice (the senders patched, then the receiver read); by position, a site a
    position."""
    from transformer.analysis.patching import ROWS  # noqa: PLC0415
    from transformer.live.patching import MAX_LINE_TOKENS  # noqa: PLC0415

    shape, vocab = model_shape(request.name)
    clean_text, kind = request.clean_text, request.kind
    n = max(1, min(MAX_LINE_TOKENS, max(len(clean_text.split()), len(clean_text)) + 2))
    stacks = len(shape.stacks)
    sites = {"heads": (shape.num_layers * shape.num_heads * n if request.by_position
                       else stacks * shape.num_layers * shape.num_heads),
             "stream": (shape.num_layers + 1) * n,
             "path": (2 * shape.num_layers * shape.num_heads + 2) * (n if request.by_position else 1)
             }.get(kind, shape.num_layers * shape.num_heads)
    one = live_cost(LiveConfig(seq_len=n), 1, n, n, shape=shape, vocab=vocab)
    runs = RunCost(one.flops * (sites + 2), one.bytes * min(sites, ROWS), "", math.ceil(sites / ROWS) + 2)
    return runs.said(f"a patching map of {sites} sites")


def patching_cell(request, **_) -> RunCost:
    """The cell's three runs, and its map (the engine keeps the last studies; priced as if it had to run again)."""
    study = patching_study(request)
    return (study + RunCost(study.flops / max(study.calls, 1), study.bytes, "", 3)).said("one cell's three runs")


def attention_cost(d_model, heads, lengths, repeats, **_) -> RunCost:
    from transformer.live.run_cost import measure_cost  # noqa: PLC0415

    return measure_cost(d_model, heads, lengths, repeats)


def position_views(length, d_k, heads, **_) -> RunCost:
    """RoPE's rotated dot products and ALiBi's biases: a few ``(H, N, N)`` and ``(N, N, d_k)`` arrays."""
    cells = length * length
    return RunCost(8.0 * cells * (d_k + heads), 4 * 4 * cells * max(heads, 2), "positional views", 1)


def warm_up_device(**_) -> RunCost:
    return live_cost(LiveConfig(), 3).said("the default model once")


def rebuild_trained(spec, **_) -> RunCost:
    """A finished job's weights into a model: its build, one pass of one short line."""
    return live_cost(LiveConfig(), 1, 8, 8, shape=spec, vocab=VOCAB_SIZE).said("a trained model built")


def register_vision(spec, **_) -> RunCost:
    return RunCost(1e6, 64 * 2**20, "an image model built", 1)


def describe(key, **_) -> RunCost:
    """Loading a model from outside, once (the registry keeps it): its file's bytes read into Keras."""
    from transformer.external.registry import EXTERNAL, stored_bytes  # noqa: PLC0415

    if key in EXTERNAL:
        return NOTHING.said("a model from outside, loaded")
    size = stored_bytes(key)
    return RunCost(0.0, 3 * size, "loading a model from outside", 1, extra_seconds=size / LOAD_BYTES_PER_SECOND)


def load_model(weights, device="auto", **_) -> RunCost:
    """Reading and building a model whose loading is long (a real language model's file), once a process."""
    from transformer.runtime.device import resolve_device  # noqa: PLC0415

    if source_of(weights).loaded(resolve_device(device)):
        return NOTHING.said("the model, loaded")
    return loading(weights, "once on this server")


def loading(weights: str, where: str) -> RunCost:
    """Loading ``weights``' model (its `ModelSource.load_seconds` and `load_bytes`) ``where`` it is said to load."""
    source = source_of(weights)
    return RunCost(0.0, source.load_bytes, f"loading {source.title() or weights} from its file, {where}", 1,
                   extra_seconds=source.load_seconds)


def in_the_lane(cost: RunCost, loads: frozenset, holds) -> RunCost:
    """``cost`` with each of ``loads`` (`priced_calls.lane_loads`) the lane's child does not hold (``holds(load)``
    False) loaded first: its seconds and bytes added, and said."""
    for weights, _ in sorted(load for load in loads if not holds(load)):
        load = loading(weights, "in the background lane's own process")
        cost = (cost + load).said(f"{cost.what}, after {load.what}")
    return cost


def real_patch_map(request, **_) -> RunCost:
    """A real model's patching map: each head (L × H), each layer's stream at each position ((L + 1) × N), or each
    sender into a receiver in layer l (its l layers' heads and feed-forwards; token, position, bias; all together)
    patched alone, 64 runs a batch (`transformer.analysis.patching.ROWS`), and the two unpatched runs; its load if
    due. Its lines and receiver are checked first, as the map will: ValueError before any price."""
    from transformer.analysis.patching import ROWS  # noqa: PLC0415

    clean, _, _, into = request.checked()
    n = clean.tgt.shape[1]
    shape, vocab = model_shape(request.weights)
    runs = {"heads": shape.num_layers * shape.num_heads, "stream": (shape.num_layers + 1) * n,
            "path": into[1] * (shape.num_heads + 1) + 4 if into else 0}[request.kind]
    batch = live_cost(LiveConfig(), min(runs, ROWS), n, n, shape=shape, vocab=vocab)
    return RunCost(batch.flops * (runs + 2) / min(runs, ROWS), batch.bytes,
                   f"{runs} patched runs of {request.weights} over {n} pieces", -(-runs // ROWS) + 2) \
        + load_model(request.weights, request.device)


def real_patch_cell(request, cell=(0, 0), layer=0, **_) -> RunCost:
    """One cell of a real model's map: its two ends, its three runs and the map's grid (a walk of the stream for a
    path): six runs of one line; its load if due."""
    clean, _, _, _ = request.checked()
    n = clean.tgt.shape[1]
    shape, vocab = model_shape(request.weights)
    one = live_cost(LiveConfig(), 1, n, n, shape=shape, vocab=vocab)
    return RunCost(one.flops * 6, one.bytes, f"one cell's three runs of {request.weights} over {n} pieces", 6) \
        + load_model(request.weights, request.device)


def upload(data, **_) -> RunCost:
    return RunCost(0.0, 3 * len(data), "reading an uploaded model", 1,
                   extra_seconds=len(data) / LOAD_BYTES_PER_SECOND)


__all__ = ["NOTHING", "decoding", "model_shape", "reading"]
