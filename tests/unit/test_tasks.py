"""The tasks' own rules, checked against independent readings (datetime, the grammar's word classes)."""

import datetime
import re

import numpy as np
import pytest

from transformer.tasks import TASKS, dates, get_task
from transformer.tasks.dates import FORMS, MONTHS, WEEKDAYS, date_text
from transformer.tasks.induction import NO_RULE
from transformer.tasks.translate import CATEGORY, LEXICON, TENSE


def test_every_task_draws_reproducible_examples_whose_target_is_its_solution():
    for name, task in TASKS.items():
        first, again = task.examples(20, seed=3), task.examples(20, seed=3)
        assert first == again and first != task.examples(20, seed=4), name
        for source, target, alignment in first:
            tokens = task.source_tokens(source)
            assert task.target_text(task.solve(tokens)) == target, (name, source)
            assert len(alignment) == len(task.solve(tokens))
            assert all(index is None or 0 <= index < len(tokens) for index in alignment)
            assert set(tokens) | (set(task.solve(tokens)) - {NO_RULE}) <= set(task.tokens)


def test_dates_come_in_all_six_forms_with_the_right_weekday_and_an_iso_target():
    task = get_task("dates")
    rng = np.random.default_rng(0)
    seen = set()
    for _ in range(600):
        text = "".join(task.sample(rng))
        target = datetime.date.fromisoformat(task.expected(text))
        assert 1900 <= target.year <= 2099
        assert str(target.day) in text and str(target.year) in text
        if text[0].isalpha() and "," in text.split()[0]:  # "Tuesday, 24 November 2026"
            assert text.split(",")[0] == WEEKDAYS[target.weekday()]
        seen.add(next(form for form in FORMS if date_text(target, form) == text))
    assert seen == set(FORMS)
    assert task.expected("Tuesday, 24 November 2026") == "2026-11-24"
    assert task.expected("Nov 24, 2026") == task.expected("24/11/2026") == "2026-11-24"
    assert task.expected("31/02/2000") is None and task.expected("24 November 1899") is None


@pytest.mark.parametrize("text, expected", [
    ("24 November 2026", [12, 13, 14, 15, None, 3, 3, None, 0, 1]),
    ("Nov 5, 2026", [7, 8, 9, 10, None, 0, 0, None, None, 4]),
    ("Tuesday, 24 November 2026", [21, 22, 23, 24, None, 12, 12, None, 9, 10]),
    ("05/11/2026", [6, 7, 8, 9, None, 3, 4, None, 0, 1]),
])
def test_each_iso_character_is_aligned_with_the_source_field_it_comes_from(text, expected):
    alignment = dates.alignment(text)
    assert alignment == expected
    target = get_task("dates").expected(text)
    for written, read in zip(target, alignment):  # a digit written is a digit read, or the month's name
        assert read is None or text[read] == written or text[read] in "".join(MONTHS)


def test_translation_is_subject_object_verb_with_adjectives_after_their_noun():
    task = get_task("translate")
    source = "the old farmer sees a red bird quickly near the river".split()
    assert task.solve(source) == ["ko", "agri", "mav", "na", "pav", "ruk", "ko", "fluv", "apud", "rapi", "vid", TENSE]
    _, _, alignment = next((s, t, a) for s, t, a in task.examples(200, seed=1) if len(s.split()) == 12)
    assert len(alignment) == len(set(alignment)) + 1 == 13  # every word once, and one fans out: the verb
    assert alignment[-1] == alignment[-2] == 3
    for source_text, target_text, alignment in task.examples(200, seed=2):
        words, translated = source_text.split(), target_text.split()
        assert translated[-1] == TENSE and CATEGORY[words[alignment[-1]]] == "V" == CATEGORY[words[alignment[-2]]]
        for j, i in enumerate(alignment[:-1]):  # every other target word is its source word's translation
            assert LEXICON[CATEGORY[words[i]]][words[i]] == translated[j]
        nouns = [j for j, i in enumerate(alignment) if CATEGORY[words[i]] in "NL"]
        for j in nouns:  # an adjective follows its noun in the target, precedes it in the source
            if j + 1 < len(alignment) and CATEGORY[words[alignment[j + 1]]] == "A":
                assert alignment[j + 1] == alignment[j] - 1


def test_words_or_characters_outside_a_tasks_vocabulary_are_named():
    from transformer.core.tokens import Vocabulary

    characters = get_task("dates").vocabulary()
    with pytest.raises(ValueError, match=re.escape("outside this model's vocabulary: '!', x")):
        characters.encode(list("24 Nox 2026!"))
    translate = get_task("translate").vocabulary()
    with pytest.raises(ValueError, match="outside this model's vocabulary: unicorn"):
        translate.encode("the unicorn sees a dog".split())
    assert isinstance(characters, Vocabulary) and characters.tokens[:3] == ("<pad>", "<s>", "</s>")
    with pytest.raises(ValueError, match="Not a sentence of the toy grammar"):
        get_task("translate").solve("dog the sees".split())
