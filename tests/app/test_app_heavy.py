"""A link to a costly run says what it would cost and waits for a press; pressed, it runs in the background lane and
draws what the engine thread would have drawn; past the hard limits it is refused with its figures (issue 77,
item 3). The budgets are lowered so that a small model counts as costly here."""

import numpy as np
import pytest
import streamlit as st
from app_support import no_errors, open_page, specs, weight_panels

from transformer.live.run_cost import LIGHT_SECONDS_ENV, MAX_GFLOP_ENV
from ui import heavy_runs

pytestmark = pytest.mark.slow  # the background lane's child imports TensorFlow
LINK = {"seq_len": "6", "d_model": "32", "heads": "2"}


def test_a_costly_link_waits_for_a_press_then_draws_what_the_engine_draws(monkeypatch):
    light = open_page("attention", LINK)
    no_errors(light)
    expected = weight_panels(specs(light)[0])
    monkeypatch.setenv(LIGHT_SECONDS_ENV, "0.000001")
    heavy_runs._RESULTS.clear()
    at = open_page("attention", LINK)
    no_errors(at)
    asked = " ".join(w.value for w in at.warning)
    assert "A long run: 1 line of 6 tokens through d_model 32, 2 heads" in asked and "GFLOP" in asked, asked
    assert not specs(at)  # nothing computed, nothing drawn, until the press
    [button for button in at.button if button.label == "Run it"][0].click().run(timeout=240)
    no_errors(at)
    drawn = weight_panels(specs(at)[0])
    assert len(drawn) == len(expected)
    for got, want in zip(drawn, expected):
        np.testing.assert_allclose(got, want, atol=1e-5)
    again = open_page("attention", LINK)  # another session: the result is kept, nothing runs again, no press
    no_errors(again)
    assert specs(again) and not [w for w in again.warning if "A long run" in w.value]


def test_a_link_past_the_hard_limit_is_refused_with_its_figures_and_no_button(monkeypatch):
    monkeypatch.setenv(MAX_GFLOP_ENV, "0.000001")
    heavy_runs._RESULTS.clear()
    at = open_page("attention", LINK)
    no_errors(at)
    said = " ".join(e.value for e in at.error)
    assert "too large for a shared server" in said and "ATTENTION_LAB_RUN_MAX_GFLOP" in said, said
    assert not [button for button in at.button if button.label == "Run it"] and not specs(at)


def test_the_views_of_a_costly_run_compute_in_the_background_lane_too(monkeypatch):
    """A pressed run's norms grid and score terms run one line of the same model: on the shared engine thread they
    would cost up to as much as the run itself, so they go to the lane with the page's press."""
    monkeypatch.setenv(LIGHT_SECONDS_ENV, "0.000001")
    heavy_runs._RESULTS.clear()
    at = open_page("attention", {**LINK, "cells": "norms", "view": "Score terms"})
    [button for button in at.button if button.label == "Run it"][0].click().run(timeout=240)
    no_errors(at)
    calls = {key[0] for key in heavy_runs._RESULTS}
    assert {"run_live", "value_norms", "score_terms"} <= calls, calls
    assert any("On `<s>`" in c.value or "‖α·f(x)‖" in c.value for c in at.caption)
    assert len(specs(at)) >= 2  # the grid of norms and the score terms


def test_a_heads_link_priced_past_the_budget_asks_then_draws_the_same_roles(monkeypatch):
    """A roles study is priced whole, every chunk of its lines: past the light budget a link shows the price and
    waits; pressed, the lane computes what the engine thread would have (issue 86, items 1 and 2)."""
    query = {"roles_lines": "repeated", "roles_count": "8"}
    light = open_page("heads", query)
    no_errors(light)
    expected = specs(light)
    assert expected
    monkeypatch.setenv(LIGHT_SECONDS_ENV, "0.000001")
    heavy_runs._RESULTS.clear()
    st.cache_resource.clear()  # a result computed already costs nothing: price it afresh
    at = open_page("heads", query)
    no_errors(at)
    asked = " ".join(w.value for w in at.warning)
    assert "A long run: head roles over 8 lines" in asked and "model call" in asked, asked
    assert not specs(at)
    [button for button in at.button if button.label == "Run it"][0].click().run(timeout=240)
    no_errors(at)
    drawn = specs(at)
    assert len(drawn) == len(expected)
    assert "head_roles" in {key[0] for key in heavy_runs._RESULTS}


def test_the_measure_button_says_its_price_and_is_the_press(monkeypatch):
    """Measure all heads: its caption prices the whole measure, and a press runs it (in the lane when costly)
    without asking a second time."""
    from transformer.live import importance

    monkeypatch.setattr(importance, "_MEASURED", type(importance._MEASURED)())  # none measured by earlier tests
    at = open_page("heads", {"weights": "reverse", "imp_count": "50"})
    no_errors(at)
    said = " ".join(c.value for c in at.caption)
    assert "heads ablated in turn on 50 examples each" in said and "GFLOP" in said, said
    monkeypatch.setenv(LIGHT_SECONDS_ENV, "0.000001")
    heavy_runs._RESULTS.clear()
    [button for button in at.button if button.label.startswith("Measure all")][0].click().run(timeout=300)
    no_errors(at)
    assert not [w for w in at.warning if "A long run" in w.value]
    assert "measure_ablation" in {key[0] for key in heavy_runs._RESULTS}
    assert any("The model as it is" in m.value for m in at.markdown)
