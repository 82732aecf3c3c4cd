"""Where this server keeps files that outlive it: the data directory (``ATTENTION_LAB_DATA_DIR``; default
``attention-lab`` under the user's cache directory, ``$XDG_CACHE_HOME`` or ``~/.cache``; ``off``: none). Replicas
that share it share the models trained on any of them (`transformer.training.kept_on_disk`) and the uploads
(`transformer.external.registry`)."""

from __future__ import annotations

import math
import os
from pathlib import Path

DATA_DIR_ENV = "ATTENTION_LAB_DATA_DIR"
DATA_MB_ENV, DATA_MB_DEFAULT = "ATTENTION_LAB_DATA_MB", 2048  # the models and uploads kept on disk together, MB


def data_dir() -> Path | None:
    """The data directory (created), or None when ``ATTENTION_LAB_DATA_DIR`` is ``off``."""
    chosen = os.environ.get(DATA_DIR_ENV, "")
    if chosen.lower() == "off":
        return None
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    folder = Path(chosen) if chosen else cache / "attention-lab"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def positive(name: str, default, kind, what: str) -> tuple:
    """``(value, problem)`` of the environment variable ``name``: a ``kind`` above 0 and finite, else ``default``
    with a sentence naming the value (unset: the default, no problem)."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default, ""
    try:
        value = kind(raw)
    except ValueError:
        value = 0
    if value > 0 and math.isfinite(value):
        return value, ""
    return default, f"{name} must be {what} above 0. Received: {name}={raw!r}; using {default}."


def data_megabytes() -> float:
    """What the data directory keeps at most, models and uploads together: ``ATTENTION_LAB_DATA_MB`` MB."""
    return positive(DATA_MB_ENV, DATA_MB_DEFAULT, float, "a number of megabytes")[0]


def folder_bytes(folder: Path) -> int:
    """The bytes of every file below ``folder`` (0 when it is not there; a file that goes meanwhile counts 0)."""
    total = 0
    for path in folder.rglob("*") if folder.is_dir() else ():
        try:
            total += path.stat().st_size if path.is_file() else 0
        except FileNotFoundError:
            continue
    return total
