"""Vision Transformers trained in a session (the Train page's image tasks), kept for every session of the server as
``image:<job key>``: in memory (the least recently used dropped past `kept_limits`) and on disk (`kept_on_disk`,
folder ``image-<job key>``), so that a link to one opens it in another tab or after a restart."""

from __future__ import annotations

import collections
import logging
import threading
from dataclasses import asdict

from transformer.runtime.device import resolve_device
from transformer.tasks.images import IMAGE_TASKS
from transformer.training import kept_on_disk
from transformer.training.kept_limits import kept_limits
from transformer.training.vision import (
    PretrainedVision,
    VisionResult,
    VisionSpec,
    load_vision,
    read_vision_meta,
    rebuild_vision,
    save_vision,
)

_LOGGER = logging.getLogger(__name__)
VISION_PREFIX = "image:"
_lock = threading.Lock()
_kept: collections.OrderedDict = collections.OrderedDict()  # name -> PretrainedVision, the least recent first
_labels: dict[str, str] = {}


def vision_name(key: str) -> str:
    """The name a Vision Transformer trained in a session is kept under: ``image:<key>``."""
    return f"{VISION_PREFIX}{key}"


def is_vision_name(name) -> bool:
    return isinstance(name, str) and name.startswith(VISION_PREFIX)


def _disk_key(name: str) -> str:
    return "image-" + name[len(VISION_PREFIX):]


def register_vision(spec: VisionSpec, trained, key: str, label: str, device: str) -> str:
    """Keep the finished job ``key``'s model (``trained``: a `transformer.training.worker.Trained`), rebuilt on
    ``device``, for every session; its name. A name kept already is kept as it is (a second click)."""
    name = vision_name(key)
    with _lock:
        if name in _kept:
            return name
    model = rebuild_vision(spec, trained.weights, device)
    result = VisionResult(spec, model, trained.accuracy, trained.seconds, trained.history)
    _keep_in_memory(PretrainedVision(name, spec, model, tuple(IMAGE_TASKS[spec.task].classes), trained.accuracy,
                                     device), label)
    try:
        kept_on_disk.keep(lambda folder: save_vision(result, folder), _disk_key(name), label,
                          {"kind": "vision", "spec": asdict(spec)})
    except OSError as error:
        _LOGGER.warning("The model %s could not be kept on disk (%s): it lasts as long as this server.", name, error)
    return name


def _keep_in_memory(model: PretrainedVision, label: str) -> None:
    most, _ = kept_limits()
    with _lock:
        _kept[model.name], _labels[model.name] = model, label
        _kept.move_to_end(model.name)
        while len(_kept) > most:
            _labels.pop(next(iter(_kept)), None)
            _kept.popitem(last=False)


def _not_kept(name: str) -> ValueError:
    return ValueError(f"No image model trained on this server is called {name!r} (it may have been dropped to make "
                      "room, or trained on another server): train it again on the Train page.")


def vision_model(name: str, device: str | None = None) -> PretrainedVision:
    """The kept model ``name``: from memory (on the device it was rebuilt on), else read from disk onto ``device``
    (None: the GPU when there is one), each file checked against its hash. ValueError when it is not kept or
    damaged."""
    with _lock:
        if name in _kept:
            _kept.move_to_end(name)
            return _kept[name]
    if not is_vision_name(name) or not kept_on_disk.kept(_disk_key(name)):
        raise _not_kept(name)
    folder, label = kept_on_disk.verified(_disk_key(name))
    model = load_vision(folder, name, device or resolve_device("auto"))
    _keep_in_memory(model, label)
    return model


def vision_spec(name: str) -> VisionSpec:
    """The spec of a kept model, read without loading its weights; ValueError when it is not kept."""
    with _lock:
        if name in _kept:
            return _kept[name].spec
    if not is_vision_name(name) or not kept_on_disk.kept(_disk_key(name)):
        raise _not_kept(name)
    return read_vision_meta(kept_on_disk.folder_of(_disk_key(name))[0])[0]


def vision_label(name: str) -> str | None:
    """What a picker calls a kept model; None when it is not kept."""
    with _lock:
        if name in _labels:
            return _labels[name]
    if not is_vision_name(name) or not kept_on_disk.kept(_disk_key(name)):
        return None
    return kept_on_disk.folder_of(_disk_key(name))[1]
