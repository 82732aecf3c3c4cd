"""The app's one door to the engine: everything the pages and the Streamlit glue (`ui/`, `app_pages/`, `app.py`)
use of `transformer`, by name, so that they import no sub-package of the engine (tests/unit/test_layers.py).
Plain data in, NumPy out; the functions that compute run on the engine thread (each wrapped where it is defined,
or here: `rebuild_trained`). Beside it, the package face (`transformer/__init__.py`) serves Python users; both sit
above every layer of the engine."""

import tensorflow as tf

from transformer.analysis import cost as _cost
from transformer.analysis import position_views as _position_views
from transformer.analysis.cost import (
    COST_LENGTHS,
    differ,
    fit_range,
    quadratic_crossover,
    quadratic_share,
    supported,
)
from transformer.analysis.flow import FLOW_MAX_POSITIONS, attention_flow
from transformer.analysis.heads import ROLES, has_position_axis, line_top_roles, role_text
from transformer.analysis.measures import (
    attention_checks,
    attention_rollout,
    head_statistics,
    logsumexp_softmax,
    mask_fills,
    measured_checks,
    naive_softmax,
    neuron_terms,
    preference_terms,
    scaling_experiment,
    score_bias,
    stable_softmax,
    without_keys,
)
from transformer.core.ablation import ABLATIONS, head_label
from transformer.core.blockwise import FULL_ATTENTION_MAX, QUERY_BLOCK
from transformer.core.masks import MASK_FAMILIES, SIZED_FAMILIES, size_range
from transformer.core.shape import (
    ARCHITECTURE_STACKS,
    ARCHITECTURES,
    MAX_HEADS,
    MAX_LAYERS,
    MAX_MODEL_LAYERS,
    NORMS,
    POSITIONS,
    STACKS,
    ModelShape,
    head_counts,
    kv_head_counts,
)
from transformer.external import MAX_TOKENS, upload_limit_bytes
from transformer.external import registry as _registry
from transformer.external.registry import EXTERNAL, check_key, is_external, preset_key
from transformer.live import calibration as _calibration
from transformer.live import decode as _decode
from transformer.live import faithfulness as _faithfulness
from transformer.live import head_roles as _head_roles
from transformer.live import images as _images
from transformer.live import importance as _importance
from transformer.live import induction as _induction
from transformer.live import loading as _loading
from transformer.live import patching as _patching
from transformer.live import prices as _prices
from transformer.live import query_key as _query_key
from transformer.live import real_patching as _real_patching
from transformer.live import run as _run
from transformer.live import score_terms as _score_terms
from transformer.live import value_norms as _value_norms
from transformer.live import walkthrough as _walkthrough
from transformer.live import warm_up as _warm_up
from transformer.live.config import MAX_SEQ_LEN, SEED_BATCH, LiveConfig
from transformer.live.faithfulness import EXPLAINED_TASKS, METHODS, is_measured
from transformer.live.head_roles import (
    LINE_SOURCES,
    PATTERN_FAMILIES,
    example_lines,
    repeated_lines,
)
from transformer.live.heavy import LaneFull, heavy_lane
from transformer.live.images import IMAGE_MODELS, example_image, image_task
from transformer.live.importance import heads_of, measured
from transformer.live.induction import GROUP_LABELS, GROUPS
from transformer.live.model_cache import shape_bytes
from transformer.live.patching import PATCHING, PatchRequest
from transformer.live.priced_calls import (
    NeedsLane,
    PricedCall,
    call_key,
    lane_loads,
    prepaid,
    shared_engine,
)
from transformer.live.prices import in_the_lane
from transformer.live.run_cost import RunCost, check_cost, measure_cost
from transformer.live.sources import (
    EXTERNAL_EXAMPLE,
    EXTERNAL_IDS_EXAMPLE,
    EXTERNAL_LENGTH,
    RANDOM,
    REAL_MODELS,
    ModelSource,
    Supports,
    real_models,
    source_of,
)
from transformer.runtime.data_dir import data_dir
from transformer.runtime.device import (
    DEVICE_CHOICES,
    device_label,
    driver_gpus,
    memory_in_use,
    missing_gpu_notice,
    resolve_device,
    visible_gpus,
)
from transformer.runtime.engine_rate import engine_rate
from transformer.runtime.engine_thread import EngineStopped
from transformer.tasks import START, TASKS, get_task
from transformer.tasks.corruption import CORRUPTIONS, DATE_PARTS
from transformer.tasks.dates import date_text
from transformer.tasks.images import IMAGE_TASKS
from transformer.training import worker
from transformer.training.kept_limits import kept_limits, limit_problems
from transformer.training.pool import Job, PoolSettings, QueueFull, TrainingPool, describe_wait, duration_words
from transformer.training.pretrained import (
    SESSION_PREFIX,
    SHIPPED,
    accuracy_of,
    available,
    dropped,
    kept_label,
    missing_reason,
    register,
    session_name,
    spec_of,
    task_of,
    timeline_of,
)
from transformer.training.saved_model import TrainSpec, quick_spec
from transformer.training.timeline import PROBE_LINES
from transformer.training.train import TrainResult
from transformer.training.vision import VISION_DEFAULTS, VisionSpec
from transformer.training.vision_kept import VISION_PREFIX, vision_label
from transformer.training.vision_kept import register_vision as _register_vision

TF_VERSION = tf.__version__
# What computes runs on the one engine thread (transformer.runtime.engine_thread), wrapped here, the one door (the
# package face re-exports what it serves), each with its price (transformer.live.prices): where the engine thread is
# shared (`shared_engine`), a call priced over the light budget raises `NeedsLane` instead of running there. The
# engine's own modules call each other directly, already on it.
attention_cost = PricedCall("attention_cost", _cost.attention_cost, _prices.attention_cost)
position_views = PricedCall("position_views", _position_views.position_views, _prices.position_views)
describe = PricedCall("describe", _registry.describe, _prices.describe, lane=False)  # it loads into this server
load_model = PricedCall("load_model", _loading.load_model, _prices.load_model, lane=False)  # into this server
needs_loading = _loading.needs_loading
real_patch_map = PricedCall("real_patch_map", _real_patching.real_patch_map, _prices.real_patch_map)
real_patch_cell = PricedCall("real_patch_cell", _real_patching.real_patch_cell, _prices.real_patch_cell)
RealPair, RealPatchRequest, IOI = _real_patching.RealPair, _real_patching.RealPatchRequest, _real_patching.IOI
upload = PricedCall("upload", _registry.upload, _prices.upload, lane=False)
decode = PricedCall("decode", _decode.decode, _prices.decode)
head_roles = PricedCall("head_roles", _head_roles.head_roles, _prices.head_roles)
measure_ablation = PricedCall("measure_ablation", _importance.measure_ablation, _prices.measure_ablation,
                              keep=_importance.keep_measure)
head_importance = PricedCall("head_importance", _importance.head_importance, _prices.head_importance)
induction_study = PricedCall("induction_study", _induction.induction_study, _prices.induction_study)
faithfulness = PricedCall("faithfulness", _faithfulness.faithfulness, _prices.faithfulness,
                          keep=_faithfulness.keep_scores)
example_maps = PricedCall("example_maps", _faithfulness.example_maps, _prices.example_maps)
read_image = PricedCall("read_image", _images.read_image, _prices.read_image)
query_key_space = PricedCall("query_key_space", _query_key.query_key_space, _prices.query_key_space)
run_live = PricedCall("run_live", _run.run_live, _prices.run_live)
read_lines = PricedCall("read_lines", _run.read_lines, _prices.read_lines)  # the lines as the model reads them
line_count = PricedCall("line_count", _run.line_count, _prices.line_count)  # its masks are made (and cached) by
sequence_lengths = PricedCall("sequence_lengths", _run.sequence_lengths, _prices.sequence_lengths)  # TensorFlow
attention_walkthrough = PricedCall("attention_walkthrough", _walkthrough.attention_walkthrough,
                                   _prices.attention_walkthrough)
keras_difference = PricedCall("keras_difference", _walkthrough.keras_difference, _prices.keras_difference)
score_terms = PricedCall("score_terms", _score_terms.score_terms, _prices.score_terms)  # why a head attends
patching_line = PricedCall("patching_line", _patching.patching_line, _prices.patching_line)  # a fresh clean line
patching_study = PricedCall("patching_study", _patching.patching_study, _prices.patching_study)  # one map
patching_cell = PricedCall("patching_cell", _patching.patching_cell, _prices.patching_cell)  # a cell's three runs
value_norms = PricedCall("value_norms", _value_norms.value_norms, _prices.value_norms)  # ‖α·f(x)‖ (Kobayashi et al.)
warm_up_device = PricedCall("warm_up_device", _warm_up.warm_up_device, _prices.warm_up_device, lane=False)
rebuild_trained = PricedCall("rebuild_trained", worker.rebuild_trained, _prices.rebuild_trained, lane=False)  # here
register_vision = PricedCall("register_vision", _register_vision, _prices.register_vision, lane=False)
run_cost = PricedCall("run_cost", _run.run_cost, _prices.run_cost, lane=False)  # a run_live's, read off its lines
calibrate = PricedCall("calibrate", _calibration.calibrate, _calibration.price, lane=False)  # at start-up


def price_of(call: PricedCall, *args, **kwargs) -> RunCost:
    """What ``call`` (one of the door's) would cost with these arguments; ValueError on arguments it refuses."""
    return call.price(*args, **kwargs)


__all__ = ["TF_VERSION", "device_label", "data_dir",
           "ABLATIONS", "ARCHITECTURE_STACKS", "ARCHITECTURES", "COST_LENGTHS",
           "DEVICE_CHOICES", "EXTERNAL", "FULL_ATTENTION_MAX", "GROUP_LABELS", "GROUPS", "LINE_SOURCES",
           "MASK_FAMILIES", "MAX_HEADS", "MAX_LAYERS", "MAX_MODEL_LAYERS", "ModelShape", "MAX_SEQ_LEN", "MAX_TOKENS",
           "NORMS",
           "PATTERN_FAMILIES", "POSITIONS", "supported",
           "PROBE_LINES", "QUERY_BLOCK", "ROLES", "SEED_BATCH", "SESSION_PREFIX", "SHIPPED", "SIZED_FAMILIES",
           "STACKS", "START", "TASKS", "accuracy_of", "attention_checks", "attention_cost", "attention_rollout",
           "available", "duration_words",
           "check_key", "date_text", "decode", "describe", "describe_wait", "differ", "driver_gpus", "dropped",
           "example_lines", "fit_range", "get_task", "has_position_axis", "head_importance", "head_label",
           "FLOW_MAX_POSITIONS", "attention_flow", "head_counts", "head_roles", "kv_head_counts", "timeline_of",
           "preference_terms", "quadratic_crossover", "score_terms", "EXPLAINED_TASKS", "METHODS", "example_maps",
           "faithfulness",
           "is_measured", "IMAGE_MODELS", "example_image", "read_image", "IMAGE_TASKS", "image_task",
           "register_vision", "VISION_DEFAULTS", "VISION_PREFIX", "VisionSpec", "vision_label",
           "head_statistics", "heads_of", "induction_study", "is_external", "Job", "kept_label",
           "kept_limits", "limit_problems", "line_top_roles", "LiveConfig", "logsumexp_softmax", "mask_fills",
           "measure_ablation", "measured", "measured_checks", "missing_reason", "memory_in_use", "missing_gpu_notice",
           "shape_bytes",
           "naive_softmax", "neuron_terms", "PoolSettings", "position_views", "quadratic_share", "query_key_space",
           "QueueFull", "rebuild_trained", "register", "repeated_lines", "resolve_device", "role_text",
           "scaling_experiment", "score_bias", "session_name", "size_range", "spec_of", "stable_softmax", "task_of",
           "TrainingPool", "TrainResult", "TrainSpec", "quick_spec", "run_live", "read_lines", "line_count",
           "sequence_lengths",
           "attention_walkthrough", "keras_difference", "value_norms", "RANDOM", "preset_key", "Supports",
           "EXTERNAL_EXAMPLE", "EXTERNAL_IDS_EXAMPLE",
           "EXTERNAL_LENGTH", "upload",
           "upload_limit_bytes", "visible_gpus",
           "warm_up_device",
           "without_keys", "EngineStopped", "CORRUPTIONS", "DATE_PARTS", "PATCHING", "patching_cell", "patching_line",
           "patching_study", "PatchRequest",
           "ModelSource", "source_of", "REAL_MODELS", "real_models", "load_model", "needs_loading",
           "real_patch_map", "real_patch_cell", "RealPair", "RealPatchRequest", "IOI",
           "LaneFull", "RunCost", "check_cost", "heavy_lane", "measure_cost", "run_cost",
           "NeedsLane", "PricedCall", "call_key", "in_the_lane", "lane_loads", "prepaid", "shared_engine", "price_of",
           "calibrate", "engine_rate"]
