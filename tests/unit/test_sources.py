"""A model's source and a task answer what the pages ask of them (`transformer.live.sources`, `transformer.tasks`):
nothing is loaded to answer."""

import numpy as np
import pytest

from transformer.live.sources import External, RandomWeights, RealModel, Trained, source_of
from transformer.tasks import get_task
from transformer.tasks.corruption import CORRUPTIONS
from transformer.tasks.induction import LINE_LENGTHS, PROBE_SEGMENTS, repeated_line


@pytest.mark.parametrize("weights, kind, outside, patchable", [
    ("random", RandomWeights, False, False),
    ("dates", Trained, False, True),
    ("induction", Trained, False, True),
    ("hub:bert_tiny_en_uncased", External, True, False),
    ("smollm2", RealModel, False, False),
])
def test_a_source_says_whether_it_is_from_outside_and_whether_patching_runs_on_it(weights, kind, outside, patchable):
    source = source_of(weights)
    assert type(source) is kind
    assert source.supports.outside is outside
    assert source.patchable() is patchable


def test_a_trained_model_patches_only_where_its_task_says_its_corruption():
    """Patching needs a way to corrupt a line: a model of a task without one (an unknown name's None) is not offered."""
    source = source_of("session:not-kept-here")
    assert source.supports.patching and source.task() not in CORRUPTIONS
    assert not source.patchable()


def test_only_a_model_from_outside_is_read_through_its_weights_and_it_neither_ablates_nor_predicts():
    """The Heads page asks `ablation`, Explanations `predictions`: a model from outside answers no to both."""
    outside = [source_of(w) for w in ("random", "copy", "hub:bert_tiny_en_uncased") if source_of(w).supports.outside]
    assert [s.weights for s in outside] == ["hub:bert_tiny_en_uncased"]
    assert not outside[0].supports.ablation and not outside[0].supports.predictions


@pytest.mark.parametrize("task, tokens, text", [
    ("dates", list("5 Mar 1999"), "5 Mar 1999"),  # a date's tokens are its characters
    ("reverse", ["a", "b", "c"], "a b c"),
])
def test_a_task_writes_its_source_tokens_as_a_person_types_them_and_reads_them_back(task, tokens, text):
    rules = get_task(task)
    assert rules.source_text(tokens) == text
    assert rules.source_tokens(rules.source_text(tokens)) == tokens


def test_an_induction_tasks_fresh_line_repeats_a_segment_of_the_measured_lengths_whatever_it_is_asked():
    line = get_task("induction").fresh_line(np.random.default_rng(3), (3, 5))
    assert line == repeated_line(np.random.default_rng(3), LINE_LENGTHS, PROBE_SEGMENTS).text
