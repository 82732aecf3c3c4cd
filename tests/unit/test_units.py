"""One unit and one rule for every page's measures: entropy in bits everywhere, no distance for cross-attention
(its queries and keys are on different position axes), distance and entropy grids on fixed scales."""

from __future__ import annotations

import numpy as np

from transformer.analysis.heads import cross_measures, has_position_axis
from transformer.analysis.measures import head_statistics
from viz.heads import measure_grid


def test_the_attention_pages_entropy_is_in_bits_as_the_heads_pages():
    uniform = np.full((2, 3, 4), 0.25)  # (H, N_q, N_k): every query spread evenly over 4 keys
    stats = head_statistics(uniform, np.ones((3, 4), bool), np.zeros(4, bool))
    np.testing.assert_allclose(stats["entropy"], [2.0, 2.0])  # log2 4


def test_cross_attention_has_no_distance_on_either_page():
    assert not has_position_axis("cross") and has_position_axis("encoder") and has_position_axis("decoder")
    measures = cross_measures(np.full((1, 2, 2, 3, 4), 0.25))  # (L, B, H, N_q, N_k)
    assert set(measures) == {"entropy"}
    np.testing.assert_allclose(measures["entropy"], 2.0)


def test_distance_and_entropy_are_drawn_on_fixed_scales():
    distance, entropy = np.array([[0.5, 1.0]]), np.array([[0.2, 0.3]])
    figure = measure_grid(distance, entropy, 4, length=8).to_dict()
    cells = [trace for trace in figure["data"] if trace.get("showscale") is False]
    assert [(trace["zmin"], trace["zmax"]) for trace in cells] == [(0.0, 7.0), (0.0, 3.0)]  # N − 1, log2 N
    only_entropy = measure_grid(None, entropy, 4, length=8).to_dict()
    assert [trace["zmax"] for trace in only_entropy["data"] if trace.get("showscale") is False] == [3.0]


def test_the_navigations_sections_hold_every_page_once():
    from ui.pages import PAGES, SECTIONS

    listed = [name for _, names in SECTIONS for name in names]
    assert sorted(listed) == sorted(name for name, *_ in PAGES) and len(listed) == len(set(listed))
    assert SECTIONS[0] == ("", ("home",))  # Home first, under no header
