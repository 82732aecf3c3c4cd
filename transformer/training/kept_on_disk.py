"""Models trained on this server, kept on disk so that a restart (or another replica sharing the folder) keeps
their links working.

The data directory is `transformer.runtime.data_dir` (``ATTENTION_LAB_DATA_DIR``; ``off`` keeps nothing). Each
model is a folder ``models/<key>/`` in the shipped models' format (``weights.weights.h5``, ``model.json``, written
by the caller) with ``kept.json`` (its label, its spec and each file's SHA-256). A folder is written under a
temporary name and renamed into place, so a reader never sees half of one, and two replicas never write one name
with different contents (the key is the training job's own). A file whose hash no longer matches is set aside
(``models/set-aside/``), never deleted, and its model is reported damaged. At most ``ATTENTION_LAB_DATA_MODELS``
models (200) and ``ATTENTION_LAB_DATA_MB`` MB (2048) are kept: the least recently opened go first, a note of
each (``models/.dropped/``) left for its link.
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

from transformer.runtime.data_dir import data_dir
from transformer.training.kept_limits import positive

KEPT_FILE = "kept.json"
DATA_MB_ENV, DATA_MODELS_ENV = "ATTENTION_LAB_DATA_MB", "ATTENTION_LAB_DATA_MODELS"
DATA_MB_DEFAULT, DATA_MODELS_DEFAULT = 2048, 200
DROPPED = ".dropped"  # models/.dropped/<key>.json: the label and spec of a model the budget removed


def models_dir() -> Path | None:
    """``models/`` in the data directory (created), or None without one."""
    root = data_dir()
    if root is None:
        return None
    (root / "models" / DROPPED).mkdir(parents=True, exist_ok=True)
    return root / "models"


KEY = re.compile(r"[A-Za-z0-9_-]{1,64}")  # a training job's key; anything else (a link is untrusted) names no folder


def _folder(key: str) -> Path | None:
    root = models_dir()
    return None if root is None or not KEY.fullmatch(key) else root / key


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def keep(write, key: str, label: str, note: dict) -> Path | None:
    """Keep a model as ``key``: ``write(folder)`` writes its files (the saved-model format), then every file's hash
    and ``label`` and ``note`` (its spec) go in ``kept.json``; its folder, or None without a data directory. A folder
    already there (another replica's) is kept as it is."""
    final = _folder(key)
    if final is None or final.exists():
        return final
    staging = final.parent / f".staging-{uuid.uuid4().hex}"
    write(staging)
    hashes = {path.name: _digest(path) for path in sorted(staging.iterdir())}
    (staging / KEPT_FILE).write_text(json.dumps({"label": label, "note": note, "sha256": hashes}, indent=2) + "\n")
    try:
        staging.rename(final)  # atomic on one file system: whole or absent
    except OSError:  # another replica renamed first: keep theirs
        shutil.rmtree(staging, ignore_errors=True)
    _keep_within_budget()
    return final


def kept(key: str) -> bool:
    """Whether a model ``key`` is on disk (renamed into place: its ``kept.json`` is there)."""
    folder = _folder(key)
    return folder is not None and (folder / KEPT_FILE).exists()


def _kept_json(key: str) -> dict:
    try:
        return json.loads((_folder(key) / KEPT_FILE).read_text())
    except (OSError, ValueError) as error:
        raise ValueError(_set_aside(key, f"its description cannot be read ({type(error).__name__})")) from None


def folder_of(key: str) -> tuple[Path, str]:
    """``(folder, label)`` of a model on disk, its files not checked (reading its description only)."""
    return _folder(key), _kept_json(key)["label"]


def verified(key: str) -> tuple[Path, str]:
    """``(folder, label)`` of a model on disk, each file checked against its hash first; ValueError naming the model
    when one is damaged or missing (the folder is set aside)."""
    folder, found = _folder(key), _kept_json(key)
    damaged = [name for name, digest in found["sha256"].items()
               if not (folder / name).exists() or _digest(folder / name) != digest]
    if damaged:
        raise ValueError(_set_aside(key, f"{', '.join(damaged)} changed on disk since it was saved", found["label"]))
    os.utime(folder)  # opened now: the last to go when the disk budget is reached
    return folder, found["label"]


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


def data_budget() -> tuple[int, float]:
    """``(models, MB)`` the disk keeps at most: ATTENTION_LAB_DATA_MODELS and ATTENTION_LAB_DATA_MB (their defaults
    where a value is not a positive number)."""
    return (positive(DATA_MODELS_ENV, DATA_MODELS_DEFAULT, int, "a whole number")[0],
            positive(DATA_MB_ENV, DATA_MB_DEFAULT, float, "a number of megabytes")[0])


def _keep_within_budget() -> None:
    """Remove the least recently opened models until at most `data_budget` are kept (the newest stays whatever its
    size); each removed one's label and spec stay behind (`dropped`), so its link can say so and train it again."""
    root = models_dir()
    folders = sorted((path for path in root.iterdir() if path.is_dir() and KEY.fullmatch(path.name)),
                     key=lambda path: path.stat().st_mtime)
    sizes = {path: sum(part.stat().st_size for part in path.iterdir()) for path in folders}
    most, megabytes = data_budget()
    while len(folders) > 1 and (len(folders) > most or sum(sizes[path] for path in folders) > megabytes * 1e6):
        oldest = folders.pop(0)
        try:
            found = json.loads((oldest / KEPT_FILE).read_text())
            (root / DROPPED / f"{oldest.name}.json").write_text(json.dumps({"label": found["label"],
                                                                             "note": found["note"]}))
        except (OSError, ValueError, KeyError):
            pass  # a damaged one goes without a note
        shutil.rmtree(oldest, ignore_errors=True)


def dropped(key: str) -> tuple[str, dict] | None:
    """``(label, note)`` of a model the disk budget removed (the note `keep` was given: its spec); None otherwise."""
    root = models_dir()
    note = None if root is None or not KEY.fullmatch(key) else root / DROPPED / f"{key}.json"
    if note is None or not note.exists():
        return None
    found = json.loads(note.read_text())
    return found["label"], found["note"]
