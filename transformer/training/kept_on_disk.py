"""Models trained on this server, kept on disk so that a restart (or another replica sharing the folder) keeps
their links working.

The data directory is ``ATTENTION_LAB_DATA_DIR`` (default: ``attention-lab`` under the user's cache directory,
``$XDG_CACHE_HOME`` or ``~/.cache``; ``off`` keeps nothing on disk). Each model is a folder ``models/<key>/`` in the
shipped models' format (``weights.weights.h5``, ``model.json``) with ``kept.json`` (its label and each file's
SHA-256). A folder is written under a temporary name and renamed into place, so a reader never sees half of one,
and two replicas never write one name with different contents (the key is the training job's own). A file whose
hash no longer matches is set aside (``models/set-aside/``), never deleted, and its model is reported damaged.
At most ``ATTENTION_LAB_DATA_MB`` MB (default 2048) are kept: the least recently opened go first.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import time
import uuid
from pathlib import Path

from transformer.training.saved_model import CONFIG_FILE, WEIGHTS_FILE, load_folder, read_meta, save

KEPT_FILE = "kept.json"
DATA_DIR_ENV, DATA_MB_ENV = "ATTENTION_LAB_DATA_DIR", "ATTENTION_LAB_DATA_MB"
DATA_MB_DEFAULT = 2048


def data_dir() -> Path | None:
    """The data directory (created), or None when ``ATTENTION_LAB_DATA_DIR`` is ``off``."""
    chosen = os.environ.get(DATA_DIR_ENV, "")
    if chosen.lower() == "off":
        return None
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    folder = Path(chosen) if chosen else cache / "attention-lab"
    (folder / "models").mkdir(parents=True, exist_ok=True)
    return folder


KEY = re.compile(r"[A-Za-z0-9_-]{1,64}")  # a training job's key; anything else (a link is untrusted) names no folder


def _folder(key: str) -> Path | None:
    root = data_dir()
    return None if root is None or not KEY.fullmatch(key) else root / "models" / key


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def keep(result, key: str, label: str) -> Path | None:
    """Write a trained model (a `transformer.training.train.TrainResult`) as ``key``; its folder, or None without
    a data directory. A folder already there (another replica's) is kept as it is."""
    final = _folder(key)
    if final is None or final.exists():
        return final
    staging = final.parent / f".staging-{uuid.uuid4().hex}"
    save(result, staging)
    hashes = {name: _digest(staging / name) for name in (WEIGHTS_FILE, CONFIG_FILE)}
    (staging / KEPT_FILE).write_text(json.dumps({"label": label, "sha256": hashes}, indent=2) + "\n")
    try:
        staging.rename(final)  # atomic on one file system: whole or absent
    except OSError:  # another replica renamed first: keep theirs
        shutil.rmtree(staging, ignore_errors=True)
    _keep_within_budget()
    return final


def kept(key: str) -> bool:
    """Whether a model ``key`` is on disk (whole: all three files)."""
    folder = _folder(key)
    return folder is not None and all((folder / name).exists() for name in (WEIGHTS_FILE, CONFIG_FILE, KEPT_FILE))


def meta(key: str) -> tuple[dict, str]:
    """``(model.json, label)`` of a model on disk, without its weights; ValueError when its files are damaged."""
    folder = _folder(key)
    try:
        return read_meta(folder), json.loads((folder / KEPT_FILE).read_text())["label"]
    except (OSError, ValueError, KeyError) as error:
        raise ValueError(_set_aside(key, f"its description cannot be read ({type(error).__name__})")) from None


def load(key: str, device: str):
    """``(spec, model, vocabulary, accuracy, label)`` of a model on disk, each file checked against its hash first;
    ValueError naming the model when one is damaged (the folder is set aside)."""
    folder = _folder(key)
    _, label = meta(key)
    hashes = json.loads((folder / KEPT_FILE).read_text())["sha256"]
    damaged = [name for name, digest in hashes.items() if _digest(folder / name) != digest]
    if damaged:
        raise ValueError(_set_aside(key, f"{', '.join(damaged)} changed on disk since it was saved", label))
    os.utime(folder)  # opened now: the last to go when the disk budget is reached
    return (*load_folder(folder, device), label)


def _set_aside(key: str, why: str, label: str = "") -> str:
    """Move a damaged model's folder to ``models/set-aside/`` (never deleted); the message that names it."""
    folder = _folder(key)
    aside = folder.parent / "set-aside" / f"{key}-{int(time.time())}"
    aside.parent.mkdir(exist_ok=True)
    try:
        folder.rename(aside)
    except OSError:
        aside = folder
    name = f"{label} ({key})" if label else key
    return (f"The model {name} kept on this server is damaged: {why}. Its files were set aside in {aside}; "
            "train it again on the Train page.")


def data_budget_mb() -> float:
    raw = os.environ.get(DATA_MB_ENV, "")
    try:
        return float(raw) if raw and float(raw) > 0 else DATA_MB_DEFAULT
    except ValueError:
        return DATA_MB_DEFAULT


def _keep_within_budget() -> None:
    """Remove the least recently opened models until those kept take at most `data_budget_mb` MB (the newest
    stays whatever its size)."""
    root = data_dir()
    folders = sorted((path for path in (root / "models").iterdir() if path.is_dir() and not path.name.startswith(
        (".", "set-aside"))), key=lambda path: path.stat().st_mtime)
    sizes = {path: sum(part.stat().st_size for part in path.iterdir()) for path in folders}
    while len(folders) > 1 and sum(sizes[path] for path in folders) > data_budget_mb() * 1e6:
        shutil.rmtree(folders.pop(0), ignore_errors=True)
