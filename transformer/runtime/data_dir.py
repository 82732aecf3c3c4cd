"""Where this server keeps files that outlive it: the data directory (``ATTENTION_LAB_DATA_DIR``; default
``attention-lab`` under the user's cache directory, ``$XDG_CACHE_HOME`` or ``~/.cache``; ``off``: none). Replicas
that share it share the models trained on any of them (`transformer.training.kept_on_disk`) and the uploads
(`transformer.external.registry`)."""

from __future__ import annotations

import os
from pathlib import Path

DATA_DIR_ENV = "ATTENTION_LAB_DATA_DIR"


def data_dir() -> Path | None:
    """The data directory (created), or None when ``ATTENTION_LAB_DATA_DIR`` is ``off``."""
    chosen = os.environ.get(DATA_DIR_ENV, "")
    if chosen.lower() == "off":
        return None
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    folder = Path(chosen) if chosen else cache / "attention-lab"
    folder.mkdir(parents=True, exist_ok=True)
    return folder
