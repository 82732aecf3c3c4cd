"""Readability of a page's first words (issue 78, item 11): the first text under a page's title, its Markdown read
as words, scored by textstat (Flesch reading ease: higher is easier, 60-70 plain English; Flesch-Kincaid grade)."""

from __future__ import annotations

import re

import textstat

TEXT_TYPES = ("markdown", "caption", "subheader", "header", "info")


def plain(text: str) -> str:
    """Markdown as the words a reader reads: links' text kept, their addresses, emphasis and code marks dropped."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r":material/[a-z_]+:", "", text)
    return re.sub(r"[*_`#>]", "", text).strip()


def first_sentences(text: str, count: int = 2) -> str:
    return " ".join(re.split(r"(?<=[.!?])\s+", plain(text))[:count])


def opening(at) -> str:
    """The first text element after an AppTest page's title (its ``st.title``), in the order the page draws."""
    seen_title = False
    for node in at.main:
        kind = getattr(node, "type", "")
        if kind == "title":
            seen_title = True
        elif seen_title and kind in TEXT_TYPES and getattr(node, "value", ""):
            return str(node.value)
    return ""


def scores(text: str) -> tuple[float, float]:
    """(Flesch reading ease, Flesch-Kincaid grade) of ``text``."""
    return textstat.flesch_reading_ease(text), textstat.flesch_kincaid_grade(text)
