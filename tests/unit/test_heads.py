"""Head roles against an independent loop-by-loop reading of TransformerLens's definitions."""

import numpy as np
import pytest

from transformer.analysis.heads import (
    ROLES,
    batch_role_scores,
    detection_pattern,
    entropy_bits,
    mean_distance,
    repeated_random_tokens,
    role_scores,
)


def reference_pattern(role, ids):
    n = len(ids)
    pattern = np.zeros((n, n), bool)
    for i in range(n):
        for j in range(n):
            pattern[i, j] = {
                "previous_token": j == i - 1,
                "duplicate_token": j < i and ids[j] == ids[i],
                "induction": 1 <= j <= i and ids[j - 1] == ids[i],
                "first_token": j == 0,
                "self": j == i,
            }[role]
    return pattern


def reference_scores(weights, ids):
    layers, heads = weights.shape[:2]
    out = {}
    for role in ROLES:
        pattern = reference_pattern(role, ids)
        scores = np.full((layers, heads), np.nan)
        for layer in range(layers):
            for head in range(heads):
                shares = [sum(weights[layer, head, i, j] for j in range(len(ids)) if pattern[i, j])
                          for i in range(len(ids)) if pattern[i].any() and weights[layer, head, i].sum() > 0.5]
                if shares:
                    scores[layer, head] = np.mean(shares)
        out[role] = scores
    return out


def random_weights(rng, layers, heads, n, causal=True, empty_row=None):
    logits = rng.normal(0, 2, (layers, heads, n, n))
    mask = np.tril(np.ones((n, n), bool)) if causal else np.ones((n, n), bool)
    if empty_row is not None:
        mask = mask.copy()
        mask[empty_row] = False
    weights = np.where(mask, np.exp(logits), 0.0)
    sums = weights.sum(-1, keepdims=True)
    return np.divide(weights, sums, out=np.zeros_like(weights), where=sums > 0)


@pytest.mark.parametrize("seed", range(4))
def test_role_scores_equal_the_definitions_on_lines_with_repeats(seed):
    rng = np.random.default_rng(seed)
    ids = rng.integers(0, 4, 12)  # few symbols: many repeats
    weights = random_weights(rng, 2, 3, 12, causal=seed % 2 == 0, empty_row=5 if seed > 1 else None)
    for role in ROLES:
        np.testing.assert_array_equal(detection_pattern(role, ids), reference_pattern(role, ids))
    scores, expected = role_scores(weights, ids), reference_scores(weights, ids)
    for role in ROLES:
        np.testing.assert_allclose(scores[role], expected[role], atol=1e-12, equal_nan=True)


def test_a_head_that_is_its_pattern_scores_one_and_distance_and_entropy_are_read_per_row():
    ids = np.array([5, 6, 7, 5, 6, 7])
    previous = np.zeros((1, 1, 6, 6))
    previous[0, 0, 0, 0] = 1
    previous[0, 0, np.arange(1, 6), np.arange(5)] = 1
    scores = role_scores(previous, ids)
    assert scores["previous_token"][0, 0] == 1 and scores["self"][0, 0] == pytest.approx(1 / 6)  # row 0: itself
    assert mean_distance(previous)[0, 0] == pytest.approx(5 / 6) and entropy_bits(previous)[0, 0] == 0
    uniform = np.tril(np.ones((6, 6)))[None, None] / np.arange(1, 7)[:, None]
    np.testing.assert_allclose(entropy_bits(uniform)[0, 0], np.mean(np.log2(np.arange(1, 7))))
    induction = np.zeros((1, 1, 6, 6))
    induction[0, 0, :, 0] = 1
    induction[0, 0, 3:, [1, 2, 3]] = 1  # tokens 3, 4, 5 repeat 0, 1, 2: they attend the token after it
    induction[0, 0, 3:, 0] = 0
    assert role_scores(induction, ids)["induction"][0, 0] == 1


def test_unknown_roles_are_named_and_batches_average_over_lines():
    with pytest.raises(ValueError, match="role='copying'"):
        detection_pattern("copying", [1, 2])
    rng = np.random.default_rng(0)
    ids = repeated_random_tokens(rng, 3, 5, 50)
    assert ids.shape == (3, 10) and (ids[:, :5] == ids[:, 5:]).all()
    weights = np.stack([random_weights(rng, 2, 2, 10) for _ in range(3)], axis=1)  # (L, B, H, N, N)
    averaged = batch_role_scores(weights, ids)
    expected = np.mean([role_scores(weights[:, b], ids[b])["induction"] for b in range(3)], axis=0)
    np.testing.assert_allclose(averaged["induction"], expected)
    assert set(averaged) == {*ROLES, "distance", "entropy"}


def test_chance_is_the_score_of_a_head_that_attends_uniformly_to_what_it_may():
    """#52.9: the role score a random head would get by spreading its attention evenly over its allowed keys."""
    from transformer.analysis.heads import chance_scores

    ids = np.array([[5, 6, 7, 5, 6, 0]])  # (B, N): a repeat, then padding
    valid = ids != 0
    causal = np.tril(np.ones((6, 6), bool))[None] & valid[:, None, :]  # (B, N, N)
    chance = chance_scores(causal, ids, valid)
    # previous token: rows 1..4 see 2, 3, 4, 5 keys: the one before gets 1/2, 1/3, 1/4, 1/5
    assert chance["previous_token"] == pytest.approx(np.mean([1 / 2, 1 / 3, 1 / 4, 1 / 5]))
    assert chance["first_token"] == pytest.approx(np.mean([1, 1 / 2, 1 / 3, 1 / 4, 1 / 5]))
    assert chance["duplicate_token"] == pytest.approx(np.mean([1 / 4, 1 / 5]))  # rows 3, 4 each have one earlier copy
    assert np.isnan(chance_scores(causal, np.array([[1, 2, 3, 4, 5, 0]]), valid)["induction"])  # nothing repeats
