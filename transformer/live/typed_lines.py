"""Random weights' lines: the source and target text as the lab's own vocabulary reads them, built from the text
itself (`encode_batches`); a trained model's are in `transformer.live.sources`, a real model's in
`transformer.live.real_lines`, a model from outside's in `transformer.live.outside`."""

from __future__ import annotations

from transformer.core import tokens
from transformer.live.config import VOCAB_SIZE, LiveConfig
from transformer.live.inputs import Batches, notices


def _lines_text(count: int) -> str:
    return f"{count} line" if count == 1 else f"{count} lines"


def encode_batches(config: LiveConfig) -> Batches:
    """Source and target text -> padded id batches sharing one vocabulary. Line counts that differ are matched to
    the side the model reads first (the target for a decoder-only model, else the source), said in a notice."""
    pad_symbols = tokens.check_pad_symbols(config.pad_symbols)
    source_lines = tokens.split_lines(config.source_text, "source")
    target_lines = tokens.split_lines(config.target_text, "target")
    source_lines, target_lines, matched = _matched_lines(source_lines, target_lines, config.architecture)
    vocabulary = tokens.build_vocabulary(source_lines + target_lines, pad_symbols, VOCAB_SIZE)
    source = tokens.encode_lines(source_lines, vocabulary, pad_symbols[0], config.seq_len)
    target = tokens.encode_lines(target_lines, vocabulary, pad_symbols[0], config.seq_len)
    pads = tokens.pad_ids(vocabulary, pad_symbols)
    return Batches(source, target, pads, matched + notices(source, target, pads, config.seq_len))


def _matched_lines(source: list, target: list, architecture: str) -> tuple[list, list, tuple]:
    """``(source, target, notices)`` with as many lines on each side as the leading side has (the target for a
    decoder-only model, else the source): the other side's extra lines left out, its missing ones the leading
    side's lines. A view never goes blank because a side it does not read has another count."""
    if len(source) == len(target):
        return source, target, ()
    lead, other = ("target", "source") if architecture == "decoder-only" else ("source", "target")
    lines = {"source": source, "target": target}
    leading, following = lines[lead], lines[other]
    count, given = len(leading), len(following)
    extra = given > count
    first, last = (count + 1, given) if extra else (given + 1, count)
    which, verb = (f"line {first}", "is") if first == last else (f"lines {first}–{last}", "are")
    said = f"the {other}'s {which} {verb} left out" if extra else f"{other} {which} {verb} their {lead} lines"
    notice = (f"The {lead} has {_lines_text(count)} and the {other} {given}: {said} (give one {other} line per "
              f"{lead} line to choose them).")
    lines[other] = following[:count] + leading[given:]
    return lines["source"], lines["target"], (notice,)
