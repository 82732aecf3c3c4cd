"""What an untrusted ``.keras`` archive may cost, checked before Keras reads it: what its members inflate to, and
the weights its config declares (the model built with none of them allocated) against what it carries and the
upload limit. Each check raises ValueError naming the figures."""

from __future__ import annotations

import json
import re
import zipfile
from pathlib import Path

import keras

from transformer.runtime.tf_patches import variables_never_allocated

MAX_EXPANSION = 100  # Keras stores its members uncompressed (1:1); DEFLATE reaches ~1000:1 only on crafted data
EXPANSION_FLOOR_BYTES = 2**20  # a member under 1 MB inflated is harmless at any ratio
CONFIG_LIMIT_BYTES = 32 * 2**20  # a model's config.json (keras-hub's largest are tens of KB; vocabularies are assets)
CARRIED_SLACK_BYTES = 2**20  # an HDF5 file's own bookkeeping, beside its weights
WEIGHT_FILES = ("model.weights.h5", "model.weights.npz")


def _mb(size: int) -> str:
    return f"{size / 2**20:,.1f} MB" if size < 2**30 else f"{size / 2**30:,.1f} GB"


def check_archive(path: Path, limit: int) -> dict:
    """The archive's members ``{name: ZipInfo}`` once their declared sizes are safe to read: their sum within
    ``limit``, none inflating more than `MAX_EXPANSION` times, a config.json within `CONFIG_LIMIT_BYTES`. Python's
    zipfile never yields more than a member declares, so the declared sizes bound what is read."""
    with zipfile.ZipFile(path) as archive:
        members = {info.filename: info for info in archive.infolist()}
    inflated = sum(info.file_size for info in members.values())
    if inflated > limit:
        raise ValueError(f"{path.name} inflates to {_mb(inflated)}; the limit is {_mb(limit)}. Received: "
                         f"{len(members)} members, {_mb(path.stat().st_size)} on disk")
    for info in members.values():
        if info.file_size > EXPANSION_FLOOR_BYTES and info.file_size > MAX_EXPANSION * max(1, info.compress_size):
            raise ValueError(f"{path.name} is not a model Keras saved: its member {info.filename!r} inflates to "
                             f"{_mb(info.file_size)} from {_mb(info.compress_size)} "
                             f"({info.file_size / max(1, info.compress_size):,.0f}×; Keras stores members as they "
                             f"are). Received: {_mb(path.stat().st_size)} on disk")
    config = members.get("config.json")
    if config is None:
        raise ValueError(f"{path.name} has no config.json: it is not a model Keras saved.")
    if config.file_size > CONFIG_LIMIT_BYTES:
        raise ValueError(f"{path.name}'s config.json is {_mb(config.file_size)}; a model's config is at most "
                         f"{_mb(CONFIG_LIMIT_BYTES)}.")
    return members


def declared_weight_bytes(config_text: str) -> int:
    """The bytes of every variable the model of ``config_text`` (a ``.keras`` file's config.json) creates, counted
    with the model built in a stateless scope (none allocated; Keras's safe mode: no code in the config)."""
    config = json.loads(config_text)
    if isinstance(config, dict):
        config["compile_config"] = None
    with variables_never_allocated() as created:
        keras.saving.deserialize_keras_object(config, safe_mode=True)
    return sum(_count(variable.shape) * _itemsize(variable.dtype) for variable in created)


def check_declared_weights(path: Path, members: dict, limit: int) -> None:
    """ValueError when the weights ``path``'s config declares exceed ``limit`` or what the archive carries (a
    config that declares more than its file holds cannot load, and would allocate it all before failing)."""
    with zipfile.ZipFile(path) as archive:
        config_text = archive.read("config.json").decode("utf-8", errors="replace")
    try:
        declared = declared_weight_bytes(config_text)
    except Exception as error:  # what Keras itself would refuse: an unknown layer, code, a broken config
        raise ValueError(f"{path.name} could not be read as a Keras model ({type(error).__name__}: "
                         f"{str(error)[:300]})") from None
    carried = sum(members[name].file_size for name in WEIGHT_FILES if name in members)
    if declared > limit:
        raise ValueError(f"{path.name} declares {_mb(declared)} of weights; the limit is {_mb(limit)}.")
    if declared > carried + CARRIED_SLACK_BYTES:
        raise ValueError(f"{path.name} declares {_mb(declared)} of weights but carries {_mb(carried)}: its "
                         "weights are not the ones its config describes.")


def _count(shape) -> int:
    count = 1
    for size in shape:
        count *= int(size or 0)
    return count


def _itemsize(dtype) -> int:
    """Bytes of one value of a Keras dtype name ("float32": 4, "bfloat16": 2, "bool": 1)."""
    bits = re.findall(r"\d+", str(dtype))
    return max(1, int(bits[-1]) // 8) if bits else 1


__all__ = ["check_archive", "check_declared_weights", "declared_weight_bytes"]
