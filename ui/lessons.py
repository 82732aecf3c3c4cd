"""Lessons: a few addresses that walk the lab's story in order, each with one sentence on what to look at (Home
lists them; a teacher shares them as they are)."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote, urlencode

from ui.pages import Page


@dataclass(frozen=True)
class Lesson:
    title: str
    page: str  # the page's URL path
    params: dict  # URL parameters, as the link writes them
    says: str  # what to look at, in one sentence

    @property
    def address(self) -> str:
        """The lesson's address relative to the app's root: ``page?field=value&…``."""
        return f"{self.page}?{urlencode(self.params, quote_via=quote)}" if self.params else self.page


def open_view(lesson: Lesson) -> None:
    """From a button's callback: open ``lesson``'s view with its link's values, in this session."""
    from ui import state  # noqa: PLC0415  (the lessons are data; opening one is the state's)

    state.open_page(Page(lesson.page).file, **state.parse_url(dict(lesson.params))[0])


LESSONS = (
    Lesson("The look-ahead mask", "attention", {"stack": "decoder", "focus": "3"},
           "Row 3 of the masked decoder self-attention: position 3 reads positions 0–3 and never a later one; the "
           "grey upper triangle is the look-ahead mask."),
    Lesson("Padding", "attention", {"src": "a b c\nd e f g h\ni", "tgt": "a b c\nd e f g h\ni", "seq_len": "8",
                                    "element": "2"},
           "Line 3 has one token and seven pads: the pads' sand-coloured columns get no weight from any query (the "
           "look-ahead mask's cells are grey), and switching "
           "the padding mask off shows what attention would do without it."),
    Lesson("How heads differ", "attention", {"weights": "dates", "view": "Model view"},
           "Every layer × head of the trained dates model on one line: the same input, and each head learned a "
           "habit of its own (random heads draw nearly the same pale picture)."),
    Lesson("What the trained dates model reads", "attention", {"weights": "dates", "stack": "cross", "layer": "1"},
           "Cross-attention of the trained dates model: each character it writes reads the source characters it "
           "comes from, and nothing reads the weekday."),
    Lesson("An attention sink in a real model", "attention", {"weights": "smollm2", "layer": "18"},
           "SmolLM2-135M, a real language model, in layer 18: almost every query of every head puts nearly all its "
           "weight on the first piece, whatever it is: an attention sink (Xiao et al. 2023). Layers 0–1 spread "
           "theirs; move the layer to see where it begins."),
    Lesson("A real previous-token head", "attention", {"weights": "smollm2", "layer": "16", "view": "Head view"},
           "Head 0 of SmolLM2's layer 16 reads the piece just before each one, on any text: the diagonal below "
           "the main one. A previous-token head, the same habit the induction model learned in its layer 0."),
    Lesson("Induction heads", "induction", {},
           "A two-layer attention-only model continues a segment it saw earlier in the line: a previous-token head "
           "in layer 0 and induction heads in layer 1, and ablating them costs the copy."),
)
