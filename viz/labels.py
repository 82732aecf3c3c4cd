"""Token labels for axes and hover: distinct when tokens repeat, escaped, cut to a readable length.

Axes carry "position·token" labels so repeated tokens stay distinct categories;
hover reads them back with %{x} / %{y}, so no per-cell strings are sent.
"""

from __future__ import annotations

MAX_LABEL_CHARS = 12

# Panels in one row of a weight grid share a pair of axes (see weight_rows). Their key categories end in
# ``column`` PANEL_MARKs so each panel's categories stay distinct while looking the same; GAP_MARKs name the
# blank categories between panels. Both are invisible (Unicode default-ignorable) and removed from tokens.
PANEL_MARK = "\u200b"  # zero width space
GAP_MARK = "\u2060"  # word joiner
_INVISIBLE_MARKS = str.maketrans("", "", PANEL_MARK + GAP_MARK)


def escape(text: str) -> str:
    """Plotly reads a few HTML tags in labels (``<s>``, ``<b>`` …): entities keep every token literal."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def short(token: str) -> str:
    """A token cut to MAX_LABEL_CHARS (with an ellipsis), escaped for a Plotly axis or hover."""
    token = str(token).translate(_INVISIBLE_MARKS)
    return escape(token if len(token) <= MAX_LABEL_CHARS else token[: MAX_LABEL_CHARS - 1] + "…")


def position_labels(tokens, positions=None) -> list[str]:
    """``["0·the", "1·cat", "2·the"]``: distinct even when tokens repeat (empty token: ``"0"``). ``positions``:
    each token's place in the sequence when some were left out (hidden specials); default 0, 1, 2 …"""
    positions = range(len(tokens)) if positions is None else [int(p) for p in positions]
    return [f"{index}·{short(token)}" if token != "" else str(index) for index, token in zip(positions, tokens)]


def written_labels(read, written) -> list[str]:
    """``["0·<s>→f", "1·f→e"]``: decoder positions named as everywhere (the token each reads, `position_labels`)
    and what each writes, where a picture is about the writing (one convention: the Glossary's "Position")."""
    return [f"{label}→{short(token)}" for label, token in zip(position_labels(read), written)]


def pooled_labels(labels, factor: int) -> list[str]:
    """Labels of pooled blocks: ``"0–3·the…"`` names the block's first token."""
    if factor == 1:
        return list(labels)
    groups = range(0, len(labels), factor)
    return [f"{start}–{min(start + factor, len(labels)) - 1}·{labels[start].split('·', 1)[-1]}" for start in groups]
