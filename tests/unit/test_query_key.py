"""The query–key space: the joint projection against NumPy written from AttentionViz's description, the live space
against the walkthrough's queries and keys, and the scatter's builder."""

import numpy as np
import pytest

from transformer.analysis.query_key import distance_correlation, joint_projection, pearson, query_correlation
from transformer.live.config import LiveConfig
from transformer.live.query_key import query_key_space
from transformer.live.walkthrough import attention_walkthrough
from viz.query_key import WEBGL_FROM, query_key_figure


def _softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def test_the_projection_keeps_every_querys_preference_and_equalises_the_norms():
    rng = np.random.default_rng(0)
    q, k = rng.normal(1.0, 1.0, (30, 8)), rng.normal(-2.0, 3.0, (40, 8))
    projection = joint_projection(q, k)
    sq, sk = projection.scaled_queries, projection.scaled_keys
    np.testing.assert_allclose(_softmax(sq @ sk.T), _softmax(q @ k.T), atol=1e-12)  # translation and c, 1/c
    c = projection.scale  # equal mean norms before the translation
    np.testing.assert_allclose(np.linalg.norm(q * c, axis=1).mean(), np.linalg.norm(k / c, axis=1).mean())
    np.testing.assert_allclose(sk.mean(0), sq.mean(0), atol=1e-12)  # scaled, then translated: one centroid
    np.testing.assert_allclose(sq, q * projection.scale, atol=1e-12)
    both = np.concatenate([sq, sk])
    values, vectors = np.linalg.eigh(np.cov(both.T))  # PCA as the covariance's top eigenvectors
    top = vectors[:, ::-1][:, :2]
    expected = (both - both.mean(0)) @ top
    points = np.concatenate([projection.queries, projection.keys])
    np.testing.assert_allclose(np.abs(points), np.abs(expected), atol=1e-9)  # up to each axis's sign
    np.testing.assert_allclose(projection.explained, values[::-1][:2] / values.sum(), atol=1e-12)


def test_distance_correlation_is_one_when_nearness_is_the_dot_product():
    keys = np.array([[0.0, 0.0], [1.0, 0.0], [3.0, 0.0]])
    queries = np.array([[3.0, 0.0]])
    dots = -np.linalg.norm(queries[:, None] - keys[None], axis=-1)  # (1, 3): the dot product is −distance
    assert distance_correlation(queries, keys, dots, np.ones((1, 3), bool)) == pytest.approx(1.0)
    assert np.isnan(pearson([1.0], [2.0])) and np.isnan(pearson([1.0, 1.0], [2.0, 3.0]))


def test_the_live_space_projects_the_walkthroughs_real_queries_and_keys():
    config = LiveConfig(source_text="1 2 3 4 0 0 0\n5 6 7 0 0 0 0", target_text="1 2 0 0 0 0 0\n3 4 5 6 0 0 0")
    space = query_key_space(config, "cross", 1, 2)
    walk = attention_walkthrough(config, "cross", 1)
    queries = walk.tensors["query_heads"][:, 2][[0, 0, 1, 1, 1, 1], [0, 1, 0, 1, 2, 3]]  # the target's real tokens
    keys = walk.tensors["key_heads"][:, 2][[0, 0, 0, 0, 1, 1, 1], [0, 1, 2, 3, 0, 1, 2]]  # the source's
    projection = joint_projection(queries, keys)
    np.testing.assert_allclose(space.points, np.concatenate([projection.queries, projection.keys]), atol=1e-5)
    assert space.is_query.sum() == 6 and len(space.tokens) == 13 and space.tokens[:2] == ("1", "2")
    assert list(space.lines[:6]) == [0, 0, 1, 1, 1, 1] and list(space.positions[6:10]) == [0, 1, 2, 3]
    per_query = []  # what distance tracks: each query's ranking of its keys (a query's softmax ignores offsets)
    for q_rows, k_rows in (((0, 2), (0, 4)), ((2, 6), (4, 7))):  # each line's real queries and keys
        qs, ks = projection.queries[slice(*q_rows)], projection.keys[slice(*k_rows)]
        near = -np.linalg.norm(qs[:, None] - ks[None], axis=-1)  # (n_q', n_k')
        dots = queries[slice(*q_rows)] @ keys[slice(*k_rows)].T / np.sqrt(queries.shape[1])
        per_query += [np.corrcoef(a, b)[0, 1] for a, b in zip(near, dots)]
    assert space.correlation == pytest.approx(np.mean(per_query), abs=1e-6)


def test_the_mean_per_query_correlation_ignores_each_querys_offset():
    near = np.array([[1.0, 2.0, 3.0], [1.0, 2.0, 3.0]])
    dots = np.array([[10.0, 11.0, 12.0], [0.0, 1.0, 2.0]])  # pooled, nearness and dot products disagree
    assert query_correlation(near, dots, np.ones((2, 3), bool)) == pytest.approx(1.0)
    assert pearson(near.ravel(), dots.ravel()) < 0.5


def test_coinciding_points_are_counted():
    config = LiveConfig(source_text="1 2 3\n1 2 3", target_text="1 2 3\n1 2 3", seq_len=3)
    space = query_key_space(config, "encoder", 0, 0)
    assert len(space.points) == 12 and space.distinct == 6


def test_the_position_colours_read_on_light_and_dark_backgrounds():
    from plotly.colors import hex_to_rgb

    from viz.query_key import POSITION_SCALE

    def luminance(colour):
        return sum(w * c / 255 for w, c in zip((0.2126, 0.7152, 0.0722), hex_to_rgb(colour)))
    assert all(0.2 <= luminance(colour) <= 0.7 for _, colour in POSITION_SCALE)


def test_bad_heads_and_models_from_outside_are_named():
    with pytest.raises(ValueError, match="head must be from 0 to 3"):
        query_key_space(LiveConfig(), "encoder", 0, 4)
    with pytest.raises(ValueError, match="layer must be from 0 to 1"):
        query_key_space(LiveConfig(), "encoder", 5, 0)
    with pytest.raises(ValueError, match="lab's own models"):
        query_key_space(LiveConfig(weights="hub:gpt2_base_en", architecture="decoder-only"), "decoder", 0, 0)


def test_the_scatter_has_queries_clickable_hover_naming_the_token_and_webgl_for_many_points():
    points = np.array([[0.0, 1.0], [1.0, 0.0], [2.0, 2.0]])
    fig = query_key_figure(points, np.array([True, True, False]), np.array([0, 1, 1]), np.array([0, 3, 1]),
                           ("the", "<s>", "cat"), "token", "head")
    queries, keys = fig.data
    assert queries.type == "scatter" and queries.meta == {"scatter": "query"} and keys.meta is None
    assert list(queries.customdata[1]) == ["&lt;s&gt;", "2", "3"] and "line %{customdata[1]}" in queries.hovertemplate
    assert fig.layout.meta == {"click": True} and keys.marker.symbol == "x"
    assert query_key_figure(points, np.array([True, True, False]), np.array([0, 1, 1]), np.array([0, 3, 1]),
                            ("a", "b", "c"), "position").data[0].marker.showscale
    assert fig.layout.xaxis.range == fig.layout.yaxis.range and fig.layout.yaxis.scaleanchor == "x"
    many = np.random.default_rng(0).normal(size=(WEBGL_FROM, 2))
    webgl = query_key_figure(many, np.arange(WEBGL_FROM) % 2 == 0, np.zeros(WEBGL_FROM, int),
                             np.arange(WEBGL_FROM), tuple("x" * WEBGL_FROM), "side")
    assert {trace.type for trace in webgl.data} == {"scattergl"}
    with pytest.raises(ValueError, match="colour_by"):
        query_key_figure(points, np.ones(3, bool), np.zeros(3), np.zeros(3), ("a", "b", "c"), "size")
