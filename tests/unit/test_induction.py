"""The induction task and the shipped two-layer attention-only model: the task's lines and rule, `read` against a
NumPy forward pass, and the issue's targets on fresh seeded lines (accuracy, head roles, ablations)."""

import numpy as np
import pytest
from numpy_reference import subsequent_mask, transformer_forward

from transformer.analysis.heads import batch_role_scores
from transformer.tasks import get_task
from transformer.tasks.induction import LINE_LENGTHS, PROBE_SEGMENTS, SYLLABLES, induction_rule, line_ids, repeated_line
from transformer.training.next_token import induction_accuracy, probe_lines, read_ids
from transformer.training.pretrained import load_pretrained


@pytest.fixture(scope="module")
def induction():
    return load_pretrained("induction", "/CPU:0")


@pytest.fixture(scope="module")
def scores(induction):
    """Role scores of every head over 64 fresh probe lines."""
    lines = probe_lines(64, seed=99)
    ids = line_ids(induction.vocab, [line.tokens for line in lines], LINE_LENGTHS[1])
    _, attention = read_ids(induction.model, ids)
    return batch_role_scores(attention, ids, ids != 0)


def test_a_line_repeats_its_segment_at_a_later_offset_within_the_lengths():
    rng = np.random.default_rng(0)
    for _ in range(200):
        line = repeated_line(rng, LINE_LENGTHS, PROBE_SEGMENTS)
        assert LINE_LENGTHS[0] <= len(line.tokens) <= LINE_LENGTHS[1]
        assert PROBE_SEGMENTS[0] <= line.size <= PROBE_SEGMENTS[1]
        assert line.second >= line.first + line.size
        assert line.tokens[line.first:line.first + line.size] == line.tokens[line.second:line.second + line.size]
    assert len(set(SYLLABLES)) == 300


def test_the_rule_predicts_what_followed_the_latest_earlier_occurrence():
    assert induction_rule(list("abcab")) == [None, None, None, "b", "c"]
    assert induction_rule(list("abab")) == [None, None, "b", "a"]
    assert induction_rule(["a", "x", "a", "y", "a"]) == [None, None, "x", None, "y"]  # the latest occurrence wins
    task = get_task("induction")
    assert task.decoder_only and task.solve(["bam", "ben", "bam"]) == ["·", "·", "ben"]
    with pytest.raises(ValueError, match="300 syllables"):
        task.solve(["bam", "zzz"])


def test_examples_align_each_repeated_query_with_the_token_after_its_earlier_occurrence():
    for text, _, alignment in get_task("induction").examples(20, seed=3):
        tokens = text.split()
        for query, key in enumerate(alignment):
            if key is not None:
                assert tokens[key - 1] == tokens[query] and key <= query


def test_read_matches_a_numpy_forward_pass_of_the_shipped_model(induction):
    text = get_task("induction").example
    probabilities, attention = induction.read(text)
    ids = induction.vocab.encode(text.split())
    w = {weight.path.split("/", 1)[1]: weight.numpy().astype(np.float64) for weight in induction.model.weights}
    hidden, weights, _ = transformer_forward(w, np.array(ids), stack="decoder", layers=2, heads=4, d_ff=0,
                                             norm="pre", self_mask=subsequent_mask(len(ids)), learned=True)
    logits = hidden @ w["target_embedding/embed/embeddings"].T  # shared output weights
    expected = np.exp(logits - logits.max(-1, keepdims=True))
    np.testing.assert_allclose(probabilities, expected / expected.sum(-1, keepdims=True), atol=2e-5)
    np.testing.assert_allclose(attention["decoder"], np.stack(weights), atol=2e-5)
    assert probabilities.shape == (len(ids), len(induction.vocab)) and attention["decoder"].shape == (2, 4, 24, 24)


def test_read_zeroes_the_ablated_heads_and_refuses_bad_input(induction):
    text = get_task("induction").example
    plain, _ = induction.read(text)
    ablated, _ = induction.read(text, ablate=[(1, 0), (1, 1), (1, 2), (1, 3)])
    assert not np.allclose(plain, ablated)
    with pytest.raises(ValueError, match="layers 0 to 1, heads 0 to 3"):
        induction.read(text, ablate=[(2, 0)])
    with pytest.raises(ValueError, match="zzz"):
        induction.read("bam zzz")
    with pytest.raises(ValueError, match="up to 64 tokens"):
        induction.read(" ".join(["bam"] * 65))
    with pytest.raises(ValueError, match="decoder-only"):
        load_pretrained("reverse", "/CPU:0").read("a b")


def test_the_model_copies_the_second_occurrence_and_not_the_first(induction):
    accuracy = induction_accuracy(induction.model, induction.vocab, count=200, seed=2026)
    assert accuracy["second"] >= 0.85
    assert accuracy["first"] <= 0.02  # chance is 1 in 300


def test_a_previous_token_head_in_layer_0_and_an_induction_head_in_layer_1(scores):
    assert scores["previous_token"][0].max() >= 0.7
    assert scores["induction"][1].max() >= 0.7
    assert scores["induction"][0].max() < 0.2 and scores["previous_token"][1].max() < 0.2


def _heads(scores, role, layer, threshold=0.5):
    return [(layer, head) for head in range(4) if scores[role][layer, head] >= threshold]


@pytest.mark.slow
def test_ablating_the_induction_heads_or_the_previous_token_heads_breaks_copying(induction, scores):
    base = induction_accuracy(induction.model, induction.vocab, count=200, seed=2026)["second"]
    for role, layer in (("induction", 1), ("previous_token", 0)):
        heads = _heads(scores, role, layer)
        assert induction_accuracy(induction.model, induction.vocab, 200, 2026, ablate=heads)["second"] <= 0.30
    # every layer-1 head is an induction head, so no other layer-1 heads exist to ablate as a control; the
    # layer-0 heads that are not previous-token heads are one, and one induction head alone is redundant
    others = [(0, head) for head in range(4) if (0, head) not in _heads(scores, "previous_token", 0)]
    assert others and base - induction_accuracy(induction.model, induction.vocab, 200, 2026,
                                                ablate=others)["second"] < 0.10
    for head in range(4):
        assert base - induction_accuracy(induction.model, induction.vocab, 200, 2026,
                                         ablate=[(1, head)])["second"] < 0.10


def test_the_study_measures_each_group_and_one_lines_loss_as_numpy_would(induction):
    from transformer.live.induction import induction_study

    study = induction_study(seed=5, count=60, ablated="induction", device="cpu")
    again = induction_accuracy(induction.model, induction.vocab, count=60, seed=5)
    assert study.accuracy["none"] == again
    assert study.groups["induction"] == tuple((1, head) for head in range(4))
    assert set(study.groups["others"]).isdisjoint(study.groups["induction"] + study.groups["previous_token"])
    probabilities, _ = induction.read(study.line.text, ablate=study.groups["induction"])
    ids = induction.vocab.encode(list(study.line.tokens))
    expected = -np.log(probabilities[np.arange(len(ids) - 1), ids[1:]])
    np.testing.assert_allclose(study.loss, expected, rtol=1e-4, atol=1e-4)
    for name, value in (("seed", -1), ("count", 0), ("ablated", "all")):
        with pytest.raises(ValueError, match=name):
            induction_study(**{name: value})
    with pytest.raises(ValueError, match="induction task"):
        induction_study(weights="reverse")


def test_next_tokens_ablate_by_kind_as_read_does(induction):
    lines = [list(line.tokens) for line in probe_lines(4, seed=8)]
    heads = [("decoder", 1, head) for head in range(4)]
    plain = induction.next_tokens(lines)
    zeroed = induction.next_tokens(lines, heads, "zero")
    averaged = induction.next_tokens(lines, heads, "mean")
    probabilities, _ = induction.read(" ".join(lines[0]), ablate=[triple[1:] for triple in heads])
    assert zeroed[0] == induction.vocab.decode(probabilities.argmax(-1))
    assert plain != zeroed and zeroed != averaged
    assert [len(row) for row in averaged] == [len(line) for line in lines]
