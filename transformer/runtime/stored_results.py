"""Results worth keeping across restarts (each head's ablation measured on a trained model: seconds each), as small
JSON files in the data directory (`transformer.runtime.data_dir`): ``results/<kind>/<SHA-256 of the key>.json``
holding the key, the value and the value's hash. Written under a temporary name and renamed into place; a file
whose hash or key does not match is set aside (``.set-aside``) and the result computed again."""

from __future__ import annotations

import hashlib
import json
import uuid

from transformer.runtime.data_dir import data_dir


def _path(kind: str, key: str):
    root = data_dir()
    return None if root is None else root / "results" / kind / f"{hashlib.sha256(key.encode()).hexdigest()}.json"


def recall(kind: str, key: str):
    """The value kept for ``key`` (JSON-serialisable), or None: never kept, no data directory, or damaged."""
    path = _path(kind, key)
    if path is None or not path.exists():
        return None
    try:
        kept = json.loads(path.read_text())
        value = json.dumps(kept["value"], sort_keys=True)
        if kept["key"] != key or hashlib.sha256(value.encode()).hexdigest() != kept["sha256"]:
            raise ValueError("a key or hash that does not match")
    except (OSError, ValueError, KeyError, TypeError):
        path.replace(path.with_suffix(".set-aside"))  # kept for a look, never read again
        return None
    return kept["value"]


def remember(kind: str, key: str, value) -> None:
    """Keep ``value`` for ``key`` (nothing without a data directory; a failed write only costs the recomputation)."""
    path = _path(kind, key)
    if path is None:
        return
    text = json.dumps(value, sort_keys=True)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        staging = path.with_name(f".{uuid.uuid4().hex}.json")
        staging.write_text(json.dumps({"key": key, "value": value,
                                       "sha256": hashlib.sha256(text.encode()).hexdigest()}))
        staging.replace(path)
    except OSError:
        pass
