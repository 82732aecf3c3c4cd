"""Every text from a link, a file or a person is shown as text (issue 77, item 9): a link value that does not
parse, a typed line, a pad symbol, a model name are echoed in messages and captions, and none may turn into a link,
an image (a request the browser makes), a colour or an icon. Checked over every field of the link, on the pages that
echo most, by the Markdown each message element is given."""

import re

import pytest
from app_support import no_errors, open_page

from ui.state import FIELDS
from ui.text import as_text

INJECTED = "![x](http://127.0.0.1:8999/n)[Log in again](https:example.invalid):red[pwned]:material/home:**b**"
MARKDOWN_ELEMENTS = ("markdown", "caption", "warning", "error", "info", "success", "title", "header", "subheader")
# What the Markdown would read as a link, an image, a colour or an icon: the injected text unescaped
ACTIVE = re.compile(r"(?<!\\)\[Log in again(?<!\\)\]|(?<!\\)!(?<!\\)\[x|(?<!\\):red(?<!\\)\[|(?<!\\):material/home")


def _echoed(at) -> list[str]:
    return [element.value for kind in MARKDOWN_ELEMENTS for element in getattr(at, kind)
            if isinstance(getattr(element, "value", None), str)]


def test_as_text_escapes_what_markdown_and_streamlit_read_and_keeps_the_text():
    escaped = as_text(INJECTED)
    assert not ACTIVE.search(escaped)
    shown = re.sub(r"\\(.)", r"\1", escaped)
    assert shown.replace("\u2060", "") == INJECTED  # every character still there, only escaped (an address made inert)


@pytest.mark.parametrize("page", ["attention", "masks", "dot_product_lab", "patching"])
def test_no_field_of_a_link_turns_into_markdown_on_the_page(page):
    query = {key: INJECTED for key in FIELDS}
    at = open_page(page, query)
    no_errors(at)
    active = [text for text in _echoed(at) if ACTIVE.search(text)]
    assert not active, active[:3]
    assert any("Ignored the link" in text for text in _echoed(at))  # the values were echoed, escaped


@pytest.mark.parametrize("field", ["src", "tgt", "pads"])
def test_typed_lines_and_pads_are_echoed_as_text(field):
    at = open_page("attention", {field: f"1 2 {INJECTED}"})
    no_errors(at)
    active = [text for text in _echoed(at) if ACTIVE.search(text)]
    assert not active, active[:3]


def test_the_patching_pages_lines_and_fields_are_echoed_as_text():
    """A trained model's Patching page with every field of its own from the link: the typed lines reach its error
    (not of the task's form) and the ignored values its notices, escaped."""
    query = {key: INJECTED for key in FIELDS if key.startswith("pt_")}
    at = open_page("patching", {**query, "weights": "copy"})
    assert not at.exception
    active = [text for text in _echoed(at) if ACTIVE.search(text)]
    assert not active, active[:3]
    assert any("copy task reads the symbols" in text for text in _echoed(at))
