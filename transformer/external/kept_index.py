"""What is read slowly from a large file, kept as JSON in the data directory under the file's sha256: a later
process reads the JSON instead of parsing the file again (a GGUF's keys, vocabulary and tensor table:
`transformer.external.gguf_llama`). Nothing is kept where the data directory is ``off``."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

from transformer.runtime.data_dir import data_dir

INDEX_FOLDER = "file-index"
MAX_INDEX_BYTES = 16 * 2**20  # a kept index larger than this is not read (it is not one this lab wrote)


def file_sha256(path: Path) -> str:
    """The sha256 of the file at ``path``, read 1 MiB at a time."""
    digest = hashlib.sha256()
    with Path(path).open("rb") as file:
        while chunk := file.read(2**20):
            digest.update(chunk)
    return digest.hexdigest()


def index_path(path: Path, kind: str) -> Path | None:
    """Where ``kind``'s index of the file at ``path`` is kept (None: the data directory is off)."""
    folder = data_dir()
    return None if folder is None else folder / INDEX_FOLDER / f"{kind}-{file_sha256(path)[:32]}.json"


def kept_index(path: Path, kind: str, make: Callable[[], dict], parse: Callable[[dict], object]):
    """``parse`` of the index ``kind`` of the file at ``path``: the kept JSON where it is there and parses, else
    ``make()`` (which reads the file) parsed, then kept. A kept index that does not parse (``KeyError``,
    ``TypeError``, ``ValueError``) is made again; one that cannot be written is only not kept."""
    where = index_path(path, kind)
    if where is not None and where.is_file() and where.stat().st_size <= MAX_INDEX_BYTES:
        try:
            return parse(json.loads(where.read_text(encoding="utf-8")))
        except (KeyError, TypeError, ValueError, IndexError, AttributeError):
            pass  # damaged or of another version: made again below
    made = make()
    parsed = parse(made)
    if where is not None:
        _write(where, made)
    return parsed


def _write(where: Path, index: dict) -> None:
    """``index`` written to ``where`` whole or not at all (a temporary file renamed)."""
    part = None
    try:
        where.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", encoding="utf-8", dir=where.parent, delete=False,
                                         suffix=".part") as file:
            part = Path(file.name)
            json.dump(index, file, ensure_ascii=False)
        os.replace(part, where)
    except OSError:  # a read-only or full data directory: the file is read again next time
        if part is not None:
            part.unlink(missing_ok=True)


__all__ = ["INDEX_FOLDER", "file_sha256", "index_path", "kept_index"]
