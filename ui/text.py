"""How the pages write numbers: a number of things ("1 layer", "2 layers", "1 key/value head") and shares (never
"100%" for 99.9 %, nor "0%" for 0.04 %)."""

from __future__ import annotations


def count(number: int, noun: str, plural: str | None = None) -> str:
    """``number`` and ``noun``, the noun plural unless the number is one (``plural``: when not noun + "s")."""
    return f"{number} {noun if number == 1 else plural or noun + 's'}"


def percent(share: float, most_digits: int = 3) -> str:
    """``share`` (0–1) as a percentage with no decimals, or as many (up to ``most_digits``) as keep a share that is
    not exactly 0 or 1 from reading "0%" or "100%"; past that, "< 0.001%" or "> 99.999%"."""
    share = float(share)
    if share in (0.0, 1.0):
        return f"{share:.0%}"
    for digits in range(most_digits + 1):
        text = f"{share:.{digits}%}"
        if text not in (f"{0:.{digits}%}", f"{1:.{digits}%}"):
            return text
    bound = f"{10 ** -most_digits:.{most_digits}f}"
    return f"< {bound}%" if share < 0.5 else f"> {100 - float(bound):.{most_digits}f}%"
