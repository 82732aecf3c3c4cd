"""How the pages write a number of things: "1 layer", "2 layers", "1 key/value head"."""

from __future__ import annotations


def count(number: int, noun: str, plural: str | None = None) -> str:
    """``number`` and ``noun``, the noun plural unless the number is one (``plural``: when not noun + "s")."""
    return f"{number} {noun if number == 1 else plural or noun + 's'}"
