"""How the pages write numbers: a number of things ("1 layer", "2 layers", "1 key/value head") and shares (never
"100%" for 99.9 %, nor "0%" for 0.04 %); and text from outside (a link, a file, a person) as text."""

from __future__ import annotations

import re

# What Markdown, its HTML and Streamlit's own directives read, each escaped with a backslash (CommonMark shows any
# backslash-escaped punctuation as itself): links and images ([ ]: so "![" is no image), HTML and autolinks (< > &),
# code, emphasis, tables and maths (` * ~ | $), a colon that starts a directive, an icon, an emoji or a URL
# (:red[…], :material/…:, :smile:, https://), a bare www. autolink, a line's heading or list mark, and an underscore
# at a word's edge
_ACTIVE = re.compile(r"[\\`*\[\]<>~|$&]|:(?=[A-Za-z/])|(?<=www)\.|^[#+\-=]|(?<!\w)_|_(?!\w)", re.MULTILINE)


# Where the browser's Markdown makes a link of bare text (GFM autolink literals: found on the text after escapes are
# resolved, so a backslash cannot stop them): "http(s)://", "www." and an e-mail's "@". An invisible word joiner
# (U+2060) goes between, so the text reads the same and links nowhere.
_AUTOLINKS = re.compile(r"(?<=https:/)(?=/)|(?<=http:/)(?=/)|(?<=www)(?=\.)|(?=@)", re.IGNORECASE)
WORD_JOINER = "\u2060"


def as_text(text) -> str:
    """``text`` as Streamlit's Markdown shows it, character for character: for every message, caption or label that
    holds something from a link, a file or a person (a value that did not parse, a typed line, a model's name).
    What only reads as itself stays as it is (``d_model``, ``(…)``, ``0.5``); a line break stays a line break; a bare
    address or e-mail stays inert (no link: `_AUTOLINKS`)."""
    inert = _AUTOLINKS.sub(WORD_JOINER, str(text))
    return _ACTIVE.sub(lambda found: "\\" + found.group(0), inert).replace("\n", "  \n")


def piece_text(piece) -> str:
    """A token as a label shows it (`as_text`), a leading space drawn as "␣" (a real model's " Paris" and "Paris"
    are two pieces, and a label would hide the space)."""
    piece = str(piece)
    return as_text("␣" + piece[1:] if piece.startswith(" ") else piece)


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
