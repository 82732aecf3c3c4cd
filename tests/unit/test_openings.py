"""Every page opens with one or two plain sentences (issue 78, item 11): scored by textstat, their terms linked to
the glossary, every glossary entry pointing at a page that shows it."""

import re
import statistics

import pytest
from readability_support import first_sentences, scores

from ui import openings
from ui.choices import ATTENTION_VIEWS
from ui.pages import PAGES

PAGE_NAMES = [name for name, *_ in PAGES]
LEAST_EASE, MOST_GRADE = 60.0, 9.0  # plain English; a first-year student reads grade 9 at once


def test_every_page_has_an_opening_and_no_opening_lacks_a_page():
    assert set(openings.OPENINGS) == set(PAGE_NAMES)


@pytest.mark.parametrize("page", PAGE_NAMES)
def test_each_opening_reads_as_plain_english(page):
    words = first_sentences(openings.OPENINGS[page])
    ease, grade = scores(words)
    assert ease >= LEAST_EASE and grade <= MOST_GRADE, (page, ease, grade, words)


@pytest.mark.parametrize("view", ATTENTION_VIEWS)
def test_each_attention_views_opening_reads_as_plain_english(view):
    words = first_sentences(openings.VIEW_OPENINGS[view])
    ease, grade = scores(words)
    assert ease >= LEAST_EASE and grade <= MOST_GRADE, (view, ease, grade, words)


def test_every_attention_view_has_an_opening():
    assert set(openings.VIEW_OPENINGS) == set(ATTENTION_VIEWS)


def test_the_openings_median_reads_easily():
    eases = [scores(first_sentences(text))[0] for text in openings.OPENINGS.values()]
    assert statistics.median(eases) >= 75, eases


def test_the_scores_tell_a_dense_sentence_from_a_plain_one():
    """The measure can fail: the Cost page's opening before item 11, scored the same way."""
    dense = ("One multi-head attention layer of the sidebar's size (d_model = 64, 4 heads), on random inputs, at "
             "N = 64 … the longest length below, run block-wise (128 queries at a time) as the engine runs long "
             "sequences: under a full mask, a sliding window of 128, the Sparse Transformer's stride of 64, and with "
             "fewer key/value heads.")
    ease, grade = scores(first_sentences(dense))
    assert ease < LEAST_EASE and grade > MOST_GRADE, (ease, grade)


def test_every_linked_term_has_a_glossary_entry():
    anchors = {openings.anchor_of(name) for name, _, _ in openings.GLOSSARY}
    for page, text in {**openings.OPENINGS, **openings.VIEW_OPENINGS}.items():
        for target in re.findall(r"\]\(([^)]*)\)", text):
            where, _, anchor = target.partition("#")
            assert where == openings.GLOSSARY_PAGE and anchor in anchors, (page, target)


def test_every_glossary_entry_is_plain_and_names_a_page_that_shows_it():
    for name, meaning, page in openings.GLOSSARY:
        assert page in PAGE_NAMES, (name, page)
        assert scores(meaning)[1] <= 12, (name, meaning)


def test_the_openings_link_the_terms_a_newcomer_meets_first():
    linked = {anchor for text in openings.OPENINGS.values() for anchor in re.findall(r"#([a-z-]+)\)", text)}
    assert {"query", "key", "value", "head", "mask", "softmax", "attention", "token"} <= linked, linked


def test_every_page_is_named_by_page_and_no_script_path_is_typed_out():
    """Issue 88, item 7: pages were named by path strings in about twenty places: a typo failed only when its line
    ran. `Page` names every page of `PAGES`, and no module types a page's script path."""
    import re
    from pathlib import Path

    from ui.pages import PAGES, Page

    assert [page.value for page in Page] == [name for name, *_ in PAGES]
    root = Path(__file__).resolve().parents[2]
    typed = [f"{path.relative_to(root)}:{number}" for path in [root / "app.py", *root.glob("app_pages/*.py"),
                                                               *root.glob("ui/*.py")]
             for number, line in enumerate(path.read_text().splitlines(), 1)
             if re.search(r"app_pages/(\{|[a-z_]+\.py)", line) and path.name != "pages.py"]
    assert not typed, typed
