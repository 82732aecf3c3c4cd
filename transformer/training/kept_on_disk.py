"""Models trained on this server, kept on disk so that a restart (or another replica sharing the folder) keeps
their links working.

The data directory is `transformer.runtime.data_dir` (``ATTENTION_LAB_DATA_DIR``; ``off`` keeps nothing). Each
model is a folder ``models/<key>/`` in the shipped models' format (``weights.weights.h5``, ``model.json``, written
by the caller) with ``kept.json`` (its label, its spec and each file's SHA-256). A folder is written under a
temporary name and renamed into place, so a reader never sees half of one, and two replicas never write one name
with different contents (the key is the training job's own). A description that does not read, or a file whose
hash no longer matches, is set aside (``models/.set-aside/``, with a note of why), never deleted, and its model is
reported damaged. At most ``ATTENTION_LAB_DATA_MODELS`` models (200) and ``ATTENTION_LAB_DATA_MB`` MB (2048) are
kept: the least recently opened go first (renamed away whole, then deleted), a note of each (``models/.dropped/``)
left for its link. Replicas on one machine take turns at the budget (a lock file); a reader whose model another
replica removed meanwhile is told it was removed (`Removed`), never that it is damaged.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import logging
import os
import re
import shutil
import time
import uuid
from pathlib import Path

from transformer.runtime.data_dir import data_dir, data_megabytes, positive

KEPT_FILE = "kept.json"
DATA_MODELS_ENV, DATA_MODELS_DEFAULT = "ATTENTION_LAB_DATA_MODELS", 200
DROPPED = ".dropped"  # models/.dropped/<key>.json: the label and spec of a model the budget removed
SET_ASIDE = ".set-aside"  # models/.set-aside/<key>-<time>/: a damaged model's files; <key>.json: its label and why
RESERVED = {"set-aside"}  # the set-aside folder's name before it began with a dot: never a model
DIGEST = re.compile(r"[0-9a-f]{64}")
_LOGGER = logging.getLogger(__name__)


class Removed(ValueError):
    """A kept model's folder went while it was read: another replica's disk budget removed it (not damage)."""


def models_dir() -> Path | None:
    """``models/`` in the data directory (created), or None without one."""
    root = data_dir()
    if root is None:
        return None
    (root / "models" / DROPPED).mkdir(parents=True, exist_ok=True)
    return root / "models"


KEY = re.compile(r"[A-Za-z0-9_-]{1,64}")  # a training job's key; anything else (a link is untrusted) names no folder


def _is_key(name: str) -> bool:
    return bool(KEY.fullmatch(name)) and name not in RESERVED


def _folder(key: str) -> Path | None:
    root = models_dir()
    return None if root is None or not _is_key(key) else root / key


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
    try:
        _keep_within_budget()
    except OSError as error:  # the model is kept; the budget is kept at the next model
        _LOGGER.warning("The data directory's budget could not be applied (%s).", error)
    return final


def kept(key: str) -> bool:
    """Whether a model ``key`` is on disk (renamed into place: its ``kept.json`` is there)."""
    folder = _folder(key)
    return folder is not None and (folder / KEPT_FILE).exists()


def _kept_json(key: str) -> dict:
    """``kept.json`` of ``key``, its form checked (a label, a note, a SHA-256 for each file); `Removed` when the
    folder went meanwhile, ValueError naming the model (set aside) when it does not read."""
    folder = _folder(key)
    try:
        found = json.loads((folder / KEPT_FILE).read_text())
    except FileNotFoundError:
        raise _removed(key) from None
    except (OSError, ValueError) as error:
        raise ValueError(_set_aside(key, f"its description cannot be read ({type(error).__name__})")) from None
    if not _well_formed(found):
        raise ValueError(_set_aside(key, "its description is not the lab's (a label, its settings, each file's "
                                         "hash)", found.get("label", "") if isinstance(found, dict) else ""))
    return found


def _well_formed(found) -> bool:
    return (isinstance(found, dict) and isinstance(found.get("label"), str) and isinstance(found.get("note"), dict)
            and isinstance(found.get("sha256"), dict) and bool(found["sha256"])
            and all(isinstance(name, str) and isinstance(digest, str) and DIGEST.fullmatch(digest)
                    for name, digest in found["sha256"].items()))


def _removed(key: str) -> Removed:
    return Removed(f"The model {key} was removed from this server's disk to make room while it was read.")


def folder_of(key: str) -> tuple[Path, str]:
    """``(folder, label)`` of a model on disk, its files not checked (reading its description only)."""
    return _folder(key), _kept_json(key)["label"]


def described(key: str) -> tuple[dict, str]:
    """``(model.json, label)`` of a model on disk, model.json checked against its hash and its form (a dict with
    its ``spec``); `Removed` or ValueError (set aside) as `verified`. The weights are not read."""
    folder, found = _folder(key), _kept_json(key)
    meta = _checked_file(key, folder, found, "model.json")
    try:
        parsed = json.loads(meta)
    except ValueError:
        parsed = None
    if not isinstance(parsed, dict) or not isinstance(parsed.get("spec"), dict):
        raise ValueError(_set_aside(key, "model.json is not a saved model's", found["label"]))
    return parsed, found["label"]


def _checked_file(key: str, folder: Path, found: dict, name: str) -> bytes:
    """The bytes of ``name`` once they match their hash in ``found``; `Removed` if the folder went, ValueError (set
    aside) when they do not match or the file is missing from a folder still there."""
    try:
        data = (folder / name).read_bytes()
    except FileNotFoundError:
        data = None
    if data is not None and name in found["sha256"] and hashlib.sha256(data).hexdigest() == found["sha256"][name]:
        return data
    if not (folder / KEPT_FILE).exists():
        raise _removed(key)
    raise ValueError(_set_aside(key, f"{name} changed on disk since it was saved", found["label"]))


def verified(key: str) -> tuple[Path, str]:
    """``(folder, label)`` of a model on disk, each file checked against its hash first; ValueError naming the model
    when one is damaged or missing (the folder is set aside), `Removed` when another replica removed it meanwhile."""
    folder, found = _folder(key), _kept_json(key)
    for name in found["sha256"]:
        _checked_file(key, folder, found, name)
    try:
        os.utime(folder)  # opened now: the last to go when the disk budget is reached
    except FileNotFoundError:
        raise _removed(key) from None
    return folder, found["label"]


def _set_aside(key: str, why: str, label: str = "") -> str:
    """Move a damaged model's folder to ``models/.set-aside/`` (never deleted) with a note of why; the message that
    names it (the model, never a path: the server's log has the path)."""
    folder = _folder(key)
    aside_root = folder.parent / SET_ASIDE
    aside = aside_root / f"{key}-{int(time.time())}-{uuid.uuid4().hex[:6]}"
    aside_root.mkdir(exist_ok=True)
    with contextlib.suppress(OSError):
        (aside_root / f"{key}.json").write_text(json.dumps({"label": label, "why": why}))
    try:
        folder.rename(aside)
        _LOGGER.warning("The kept model %s is damaged (%s): set aside in %s.", key, why, aside)
    except OSError:  # another reader set it aside first
        pass
    return damaged_message(key, label, why)


def damaged_message(key: str, label: str, why: str) -> str:
    name = f"{label} ({key})" if label else key
    return (f"The model {name} kept on this server is damaged: {why}. Its files were set aside on the server "
            "(kept, not deleted); train it again on the Train page.")


def set_aside_note(key: str) -> tuple[str, str] | None:
    """``(label, why)`` of a model found damaged and set aside (after a restart too); None otherwise."""
    found = _note(SET_ASIDE, key)
    return None if found is None else (str(found.get("label", "")), str(found.get("why", "")))


def _note(folder: str, key: str) -> dict | None:
    """The note ``models/<folder>/<key>.json`` as a dict; None without one, or for one that does not read."""
    root = models_dir()
    if root is None or not _is_key(key):
        return None
    try:
        found = json.loads((root / folder / f"{key}.json").read_text())
    except (OSError, ValueError):
        return None
    return found if isinstance(found, dict) else None


def data_budget() -> tuple[int, float]:
    """``(models, MB)`` the disk keeps at most: ATTENTION_LAB_DATA_MODELS and ATTENTION_LAB_DATA_MB (their defaults
    where a value is not a positive number)."""
    return positive(DATA_MODELS_ENV, DATA_MODELS_DEFAULT, int, "a whole number")[0], data_megabytes()


def _keep_within_budget() -> None:
    """Remove the least recently opened models until at most `data_budget` are kept (the newest stays whatever its
    size), replicas on this machine one at a time; each removed one's label and spec stay behind (`dropped`), so its
    link can say so and train it again. Only models count: not the set-aside, dropped or staging folders."""
    root = models_dir()
    with open(root / ".budget.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        kept_now = _kept_folders(root)
        most, megabytes = data_budget()
        while len(kept_now) > 1 and (len(kept_now) > most or sum(size for _, size in kept_now) > megabytes * 1e6):
            _remove(root, kept_now.pop(0)[0])


def _kept_folders(root: Path) -> list[tuple[Path, int]]:
    """``(folder, bytes)`` of every kept model, least recently opened first (one that goes meanwhile is left out)."""
    found = []
    for path in root.iterdir():
        if not _is_key(path.name):
            continue
        try:
            found.append((path.stat().st_mtime, path, sum(part.stat().st_size for part in path.iterdir())))
        except FileNotFoundError:  # another replica removed it (or set it aside) meanwhile
            continue
    return [(path, size) for _, path, size in sorted(found, key=lambda row: row[0])]


def _remove(root: Path, folder: Path) -> None:
    """Leave a note of ``folder``'s model, then rename it out of the models whole (a reader sees all of it or none)
    and delete it."""
    try:
        found = json.loads((folder / KEPT_FILE).read_text())
        (root / DROPPED / f"{folder.name}.json").write_text(json.dumps({"label": found["label"],
                                                                        "note": found["note"]}))
    except (OSError, ValueError, KeyError, TypeError):
        pass  # a damaged one goes without a note
    leaving = root / f".removing-{folder.name}-{uuid.uuid4().hex[:8]}"
    try:
        folder.rename(leaving)
    except OSError:  # gone already
        return
    shutil.rmtree(leaving, ignore_errors=True)


def dropped(key: str) -> tuple[str, dict] | None:
    """``(label, note)`` of a model the disk budget removed (the note `keep` was given: its spec); None otherwise."""
    found = _note(DROPPED, key)
    if found is None or not isinstance(found.get("note"), dict):  # no note, or one that does not read: not dropped
        return None
    return str(found.get("label", "")), found["note"]
