"""Models from outside, shared by every session of a server: a keras-hub preset by name (``hub:<name>``) or an
uploaded ``.keras`` file by the SHA-256 of its bytes (``upload:<hash>``), loaded once, kept under a memory budget
(least recently used out first, loaded again when asked for).

A preset name is looked for first in ``ATTENTION_LAB_PRESETS_DIR`` (a folder of preset folders, for a server
offline), then asked of keras-hub. A link names a preset or a hash, never a path: an upload is kept in the
server's own folder under its hash, and a session sees another's upload only through a link that names that hash.
"""

from __future__ import annotations

import collections
import hashlib
import os
import re
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from transformer.external import PRESET_NAME, PRESETS_DIR_ENV, ExternalModel, load, load_preset, upload_limit_bytes
from transformer.runtime.data_dir import data_dir, data_megabytes, folder_bytes

BUDGET_ENV = "ATTENTION_LAB_EXTERNAL_MB"  # the loaded models' weights together, in MB (default 2048)
UPLOAD_DIR_ENV = "ATTENTION_LAB_UPLOAD_DIR"  # where uploads are kept (default: uploads/ in the data directory, or a
# folder in the system's temp without one)

HASH = re.compile(r"^[0-9a-f]{64}$")


HUB_PREFIX, UPLOAD_PREFIX = "hub:", "upload:"


def is_external(weights: str) -> bool:
    """Whether ``weights`` names a model from outside (``hub:…`` or ``upload:…``)."""
    return weights.startswith((HUB_PREFIX, UPLOAD_PREFIX))


def preset_key(name: str) -> str:
    """The ``weights`` value of the keras-hub preset ``name``, checked (`check_key`)."""
    return check_key(HUB_PREFIX + name)


def check_key(weights: str) -> str:
    """``weights`` when it is ``hub:<preset name>`` or ``upload:<64 hex>``; ValueError naming it else."""
    kind, _, rest = weights.partition(":")
    if (kind == "hub" and PRESET_NAME.match(rest)) or (kind == "upload" and HASH.match(rest)):
        return weights
    raise ValueError("A model from outside is hub:<keras-hub preset name> (letters, digits, _ . -) or "
                     f"upload:<the SHA-256 of its file>. Received: weights={weights[:80]!r}")


def model_bytes(model: ExternalModel) -> int:
    return int(sum(np.prod(weight.shape) * np.dtype(weight.dtype).itemsize for weight in model.model.weights))


class ExternalRegistry:
    """The loaded models, by key, under ``budget_bytes`` of weights (the newest kept whatever its size);
    thread-safe. ``evicted``: the keys unloaded to make room (a page can say so when one is asked for again)."""

    def __init__(self, budget_bytes: int | None = None, upload_dir: Path | None = None):
        self.budget_bytes = budget_bytes if budget_bytes is not None else int(
            float(os.environ.get(BUDGET_ENV, "2048")) * 2**20)
        self.upload_dir = Path(upload_dir or os.environ.get(UPLOAD_DIR_ENV) or _default_upload_dir())
        self.evicted: set[str] = set()
        self._models: collections.OrderedDict = collections.OrderedDict()  # key -> (model, bytes)
        self._lock = threading.Lock()

    def add_upload(self, data: bytes, filename: str = "upload.keras") -> str:
        """Keep an uploaded ``.keras`` file under its hash and load it (ValueError naming the problem: too large,
        not a Keras file, no attention layer it reads); its key, ``upload:<hash>``."""
        limit = upload_limit_bytes()
        if len(data) > limit:
            raise ValueError(f"{filename} is {len(data) / 2**20:,.1f} MB; the limit is {limit / 2**20:,.0f} MB.")
        digest = hashlib.sha256(data).hexdigest()
        key = f"upload:{digest}"
        if key in self._models:
            return key
        path = self._upload_path(digest)
        self.upload_dir.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f"{digest}.part.keras")  # Keras reads a file by its .keras suffix
        partial.write_bytes(data)
        try:
            model = load(partial, filename)
            info(key, model)  # everything the pages read of it: a model they cannot read is not kept
        except Exception as error:  # refused, or Keras read it and the lab cannot: nothing stays, on disk or here
            partial.unlink(missing_ok=True)
            message = str(error) if isinstance(error, ValueError) else f"{type(error).__name__}: {str(error)[:300]}"
            raise ValueError(message.replace(partial.name, filename)) from None
        partial.replace(path)
        self._uploads_within_budget(path)
        with self._lock:
            self._keep(key, model)
        return key

    def _uploads_within_budget(self, newest: Path) -> None:
        """Remove the least recently used uploads (never ``newest``) until the data directory's models and uploads
        together are within ``ATTENTION_LAB_DATA_MB``; a link to one removed says to upload it again."""
        root = data_dir()
        models = folder_bytes(root / "models") if root is not None else 0
        uploads = []
        for path in self.upload_dir.glob("*.keras"):
            try:
                uploads.append((path.stat().st_mtime, path.stat().st_size, path))
            except FileNotFoundError:
                continue
        uploads.sort(key=lambda row: row[0])
        total = models + sum(size for _, size, _ in uploads)
        for _, size, path in uploads:
            if total <= data_megabytes() * 1e6:
                return
            if path != newest:
                path.unlink(missing_ok=True)
                self.evicted.add(f"upload:{path.stem}")
                total -= size

    def get(self, key: str) -> ExternalModel:
        """The model of ``key``, loaded on first use (a preset name downloads to keras-hub's cache once, on a
        machine online); ValueError naming the problem, or an upload this server no longer has."""
        check_key(key)
        with self._lock:
            if key in self._models:
                self._models.move_to_end(key)
                self.evicted.discard(key)
                return self._models[key][0]
            model = self._load(key)
            self._keep(key, model)
            return model

    def _keep(self, key: str, model: ExternalModel) -> None:
        """Hold ``model`` under ``key``, the least recently used unloaded first to stay under the budget."""
        size = model_bytes(model)
        while self._models and self.bytes() + size > self.budget_bytes:
            old, _ = self._models.popitem(last=False)
            self.evicted.add(old)
        self._models[key] = (model, size)
        self.evicted.discard(key)

    def bytes(self) -> int:
        return sum(size for _, size in self._models.values())

    def __contains__(self, key: str) -> bool:
        return key in self._models

    def _load(self, key: str) -> ExternalModel:
        kind, _, rest = key.partition(":")
        if kind == "hub":
            return load_preset(rest)  # a name: the presets folder first, then keras-hub's registry
        path = self._upload_path(rest)
        if not path.exists():
            raise ValueError("This link's uploaded model is not on this server (it keeps uploads in its data "
                             "directory; this one was removed or never reached it): upload the file again.")
        if hashlib.sha256(path.read_bytes()).hexdigest() != rest:  # its name is its hash: checked when read
            aside = path.with_name(f"{rest}.set-aside")
            path.replace(aside)
            raise ValueError(f"The uploaded model {rest[:12]}… kept on this server is damaged: its file changed on "
                             "disk since it was uploaded. It was set aside in the server's uploads folder (its "
                             "name ends in .set-aside); upload the file again.")
        os.utime(path)  # opened now: the last upload to go when the data budget is reached
        try:
            return load(path, f"upload {rest[:12]}")
        except ValueError:  # a file kept before its checks existed, refused now: no link can trigger it again
            path.unlink(missing_ok=True)
            raise

    def _upload_path(self, digest: str) -> Path:
        return self.upload_dir / f"{digest}.keras"


def _default_upload_dir() -> Path:
    """``uploads/`` in the data directory (shared by the replicas, kept across restarts), or the system's temp."""
    root = data_dir()
    return root / "uploads" if root is not None else Path(tempfile.gettempdir()) / "attention-lab-uploads"


EXTERNAL = ExternalRegistry()


@dataclass(frozen=True)
class ExternalInfo:
    """What the sidebar says of a model from outside (plain data)."""

    key: str
    name: str
    architecture: str  # "decoder-only" (causal) or "encoder-only"
    layers: int
    heads: int
    width: int
    tokenizer: bool
    causal_layers: tuple = ()  # per attention layer: causal (its own mask), as `ExternalModel.layer_causal`
    length: int | None = None  # the one line length its input is declared with (None: any)

    @property
    def masks_text(self) -> str:
        """What the layers' masks are, in words: "causal (decoder-only)", "bidirectional (encoder-only)", or for a
        model whose layers differ, which are causal."""
        kind = "causal (decoder-only)" if self.architecture == "decoder-only" else "bidirectional (encoder-only)"
        if len(set(self.causal_layers)) < 2:
            return kind
        causal = [str(index) for index, flag in enumerate(self.causal_layers) if flag]
        return (f"{kind}; layer{'s' * (len(causal) > 1)} {', '.join(causal)} causal (its own look-ahead mask, "
                "drawn grey), the others bidirectional")


def stored_bytes(key: str) -> int:
    """The bytes a model from outside loads from: an upload's kept file, a preset's folder (0 where it is not here:
    loading it then fails with its own message)."""
    check_key(key)
    kind, _, rest = key.partition(":")
    if kind == "upload":
        path = EXTERNAL._upload_path(rest)
        return path.stat().st_size if path.exists() else 0
    served = os.environ.get(PRESETS_DIR_ENV)
    folder = Path(served) / rest if served and PRESET_NAME.match(rest) else None
    return folder_bytes(folder) if folder is not None and folder.is_dir() else 0


def info(key: str, model: ExternalModel) -> ExternalInfo:
    """What the sidebar says of ``model``, read off it (its masks: one run of three tokens)."""
    return ExternalInfo(key, model.name, "decoder-only" if model.causal else "encoder-only", model.num_layers,
                        model.num_heads, model.hidden_size, model.tokenizer is not None, model.layer_causal,
                        model.fixed_length)


def describe(key: str) -> ExternalInfo:
    """The model of ``key`` (loaded into `EXTERNAL` if it is not), described; ValueError naming the problem."""
    return info(key, EXTERNAL.get(key))


def upload(data: bytes, filename: str) -> ExternalInfo:
    """An uploaded ``.keras`` file kept and loaded (`ExternalRegistry.add_upload`), described."""
    return describe(EXTERNAL.add_upload(data, filename))

__all__ = ["BUDGET_ENV", "EXTERNAL", "PRESETS_DIR_ENV", "UPLOAD_DIR_ENV", "ExternalInfo", "ExternalRegistry",
           "check_key", "describe", "is_external", "model_bytes", "stored_bytes", "upload"]
