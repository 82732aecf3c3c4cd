"""How a link's text becomes a field's value: the parsers `ui.state.FIELDS` uses (each raising ValueError with a
sentence a notice can show), and the codes a link names ablated heads with ("e0.1")."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from transformer.service import (
    ABLATIONS,
    IMAGE_MODELS,
    MAX_HEADS,
    MAX_MODEL_LAYERS,
    RANDOM,
    REAL_MODELS,
    SESSION_PREFIX,
    SHIPPED,
    VISION_PREFIX,
    check_key,
    is_external,
)


def number(raw: str, kind):
    """``raw`` as an int or a float; a sentence, not Python's "invalid literal for int() with base 10", else."""
    try:
        return kind(raw)
    except ValueError:
        raise ValueError("is not a whole number" if kind is int else "is not a number") from None


def integer(low: int, high: int) -> Callable[[str], int]:
    def parse(raw: str) -> int:
        value = number(raw, int)
        if not low <= value <= high:
            raise ValueError(f"must be from {low} to {high}")
        return value
    return parse


def choice(choices, kind=str) -> Callable[[str], Any]:
    """A parser for one of ``choices``; an empty choice ("") is told as "or left out", not as an empty name."""
    named = ", ".join(str(option) for option in choices if option != "")
    told = f"must be one of {named}" + (", or left out" if "" in choices else "")

    def parse(raw: str):
        value = number(raw, kind) if kind in (int, float) else kind(raw)
        if value not in choices:
            raise ValueError(told)
        return value
    return parse


def text(limit: int) -> Callable[[str], str]:
    def parse(raw: str) -> str:
        if len(raw) > limit:
            raise ValueError(f"is longer than {limit:,} characters")
        return raw
    return parse


def _trained_here(raw: str, prefix: str) -> bool:
    """``raw`` names a model trained on this server: ``prefix`` and a job's key (letters and digits)."""
    return raw.startswith(prefix) and raw[len(prefix):].isalnum()


def weights(raw: str) -> str:
    if raw == RANDOM or raw in SHIPPED or raw in REAL_MODELS or _trained_here(raw, SESSION_PREFIX):
        return raw
    if is_external(raw):
        return check_key(raw)
    raise ValueError(f"must be random, {', '.join([*SHIPPED, *REAL_MODELS])}, a session model, hub:<preset> or "
                     "upload:<hash>")


def image_model(raw: str) -> str:
    if raw in IMAGE_MODELS or _trained_here(raw, VISION_PREFIX):
        return raw
    raise ValueError(f"must be {', '.join(IMAGE_MODELS)} or an image model trained here (image:<key>)")


def heads(raw: str) -> list[int]:
    """``"1 3"`` -> ``[1, 3]``: distinct heads, in order."""
    values = sorted({number(part, int) for part in raw.split()})
    if any(not 0 <= value < MAX_HEADS for value in values):
        raise ValueError(f"must be whole numbers from 0 to {MAX_HEADS - 1}")
    return values


ABLATION_CHOICES = ABLATIONS
ABLATION_LABELS = {"zero": "Zeros", "mean": "Mean over positions"}
STACK_CODES = {"encoder": "e", "decoder": "d", "cross": "c"}  # an ablated head in a link: "e0.1" = encoder L0 H1


def head_code(stack: str, layer: int, head: int) -> str:
    """``("encoder", 0, 1)`` -> ``"e0.1"``: how a link names an ablated head."""
    return f"{STACK_CODES[stack]}{layer}.{head}"


def head_triple(code: str) -> tuple[str, int, int]:
    """``"e0.1"`` -> ``("encoder", 0, 1)``; ValueError for another form."""
    stacks = {letter: stack for stack, letter in STACK_CODES.items()}
    layer, dot, head = code[1:].partition(".")
    if code[:1] not in stacks or not dot or not layer.isdigit() or not head.isdigit():
        raise ValueError(f"{code[:20]!r} is not a head such as e0.1 (encoder layer 0 head 1; d decoder, c cross)")
    return stacks[code[0]], int(layer), int(head)


def ablate(raw: str) -> list[str]:
    """``"c0.1 e1.0"`` -> the codes of heads that could exist (`head_triple`), sorted; whether this model has
    them is the engine's to say."""
    triples = sorted({head_triple(code) for code in raw.split()})
    if any(layer >= MAX_MODEL_LAYERS or head >= MAX_HEADS for _, layer, head in triples):
        raise ValueError(f"layers go from 0 to {MAX_MODEL_LAYERS - 1} and heads from 0 to {MAX_HEADS - 1}")
    return [head_code(*triple) for triple in triples]


def pixels(raw: str) -> list[int]:
    """``"9 3"`` -> ``[3, 9]``: distinct pixels of an 8 × 8 image (row-major, 0 … 63), in order."""
    values = sorted({number(part, int) for part in raw.split()})
    if any(not 0 <= value < 64 for value in values):
        raise ValueError("must be whole numbers from 0 to 63 (a pixel of the 8 × 8 image, row by row)")
    return values


def flag(raw: str) -> bool:
    if raw not in ("0", "1"):
        raise ValueError("must be 0 or 1")
    return raw == "1"
