"""The induction model and the training timeline through AppTest: the Induction page and its links, the model on
the Attention, Decode and Heads pages, the Train page's timeline, controls in the URL and bad input."""

import functools
import json
import time

import numpy as np
import pytest
from app_support import decode, no_errors, open_page, specs
from chart_support import chart_payloads, step_caption, stepped_payloads, steppers
from streamlit.testing.v1 import AppTest

from transformer.tasks import get_task
from ui import state

pytestmark = pytest.mark.app


def _titled(at, part):
    return next(spec for spec in specs(at) if part in str(spec["layout"].get("title", {}).get("text", "")))


def test_the_induction_page_shows_the_result_on_fresh_lines():
    at = open_page("induction", {"ind_count": "100"})
    no_errors(at)
    metrics = {metric.label: float(metric.value.rstrip("%")) for metric in at.metric}
    assert metrics["Second occurrence: next tokens right"] >= 85
    assert metrics["First occurrence: next tokens right"] <= 2
    assert metrics["Induction heads ablated"] <= 30
    loss = _titled(at, "next-token loss along the first line")
    bars = decode(loss["data"][0]["y"])
    assert len(loss["layout"]["shapes"]) >= 3  # two occurrences shaded, chance dashed
    assert "L1 H0, L1 H1, L1 H2, L1 H3" in " ".join(m.value for m in at.markdown)
    assert bars.max() > 3 and bars.min() < 1  # the first occurrence is hard, the second easy
    assert _titled(at, "role scores over 100 lines")


def test_ablating_the_induction_heads_raises_the_second_occurrences_loss_and_is_in_the_link():
    plain = open_page("induction", {"ind_count": "50"})
    at = open_page("induction", {"ind_count": "50"})
    at.radio(key="ind_ablate").set_value("induction").run()
    no_errors(at)
    assert at.query_params["ind_ablate"] == ["induction"] or at.query_params["ind_ablate"] == "induction"
    before = decode(_titled(plain, "next-token loss")["data"][0]["y"])
    after = decode(_titled(at, "induction heads ablated")["data"][0]["y"])
    assert after.mean() > before.mean() + 1


def test_a_bad_induction_link_is_named_and_the_page_runs():
    at = open_page("induction", {"ind_ablate": "everything", "ind_count": "7"})
    no_errors(at)
    text = " ".join(w.value for w in at.warning)
    assert "ind_ablate='everything'" in text and "ind_count='7'" in text


def test_the_induction_pages_buttons_open_the_line_on_the_attention_and_decode_pages():
    at = open_page("induction", {"ind_count": "50"})
    at.button(key="ind_attention").click().run()
    no_errors(at)
    assert at.session_state["weights"] == "induction" and at.session_state["stack"] == "decoder"
    assert at.session_state["arch"] == "decoder-only" and at.session_state["layer"] == 1
    assert len(at.session_state["src"].split()) == at.session_state["seq_len"]
    at = open_page("induction", {"ind_count": "50"})
    at.button(key="ind_decode").click().run()
    no_errors(at)
    assert at.session_state["dec_src"] and at.session_state["weights"] == "induction"


def test_a_link_with_only_the_induction_model_runs_it_on_its_example_with_its_own_options():
    at = open_page("attention", {"weights": "induction"})
    no_errors(at)
    assert not at.error
    assert at.session_state["src"] == get_task("induction").example
    assert (state.default_of("arch", "induction"), state.default_of("norm", "induction")) == ("decoder-only", "pre")
    assert "1 of 1 line right" in " ".join(e.label for e in at.expander)
    asked = open_page("attention", {"weights": "induction", "arch": "encoder-decoder"})
    assert not asked.exception
    assert "'induction' is a decoder-only with pre-norm, learned positions" in asked.error[0].value


def test_the_decode_page_continues_the_induction_prompt_by_copying():
    at = open_page("decode", {"weights": "induction"})
    no_errors(at)
    example = get_task("induction").example.split()
    assert "continuation: " + " ".join(example[18:24]) in step_caption(at)  # the rest of the repeated segment


def test_the_heads_page_names_the_induction_models_heads():
    at = open_page("heads", {"weights": "induction", "roles_lines": "examples", "roles_count": "16"})
    no_errors(at)
    roles = _titled(at, "role scores")
    grids = [decode(trace["z"]) for trace in roles["data"] if trace["type"] == "heatmap"]
    previous, induction = grids[0], grids[2]  # ROLES order
    assert previous[0].max() >= 0.7 and induction[1].max() >= 0.7
    labels = [button.label for button in at.button if button.key and button.key.startswith("open_induction")]
    assert labels and labels[0].startswith("L1 H")


def test_home_links_to_the_induction_page():
    at = open_page("home")
    no_errors(at)
    assert "induction" in {link.proto.page for link in at.get("page_link")}


@pytest.mark.slow
def test_the_train_page_draws_the_timeline_and_scrubs_the_head_grid():
    at = open_page("train")
    at.selectbox(key="train_task").set_value("induction").run()
    assert at.select_slider(key="train_d_ff_induction").value == 0
    at.number_input(key="train_steps_induction").set_value(60)
    at.button[0].click().run()
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and not at.session_state["_train_job"].finished:
        time.sleep(1)
    job = at.session_state["_train_job"]
    assert job.status == "done", job.error
    at.run()
    no_errors(at)
    timeline = next(spec for spec in specs(at) if any(
        trace.get("name") == "L1 H0" for trace in spec["data"]))
    assert len([trace for trace in timeline["data"] if trace.get("name", "").startswith("L")]) == 8
    steps = [shot.step for shot in job.timeline]
    assert steps[0] == 0 and steps[-1] == 60 and len(steps) >= 20
    (control,) = steppers(at)  # the step control (ui/stepper.py), at the latest snapshot
    assert control["index"] == len(steps) - 1 and control["names"] == [str(step) for step in steps]
    grid, timeline_frames = stepped_payloads(at)[1], stepped_payloads(at)[0]
    assert [f"at step {step}" in frame["layout"]["title"]["text"] for step, frame in zip(steps, grid["frames"])] \
        == [True] * len(steps)  # every snapshot's grid is in the browser, in order
    assert len(timeline_frames["frames"]) == len(steps)
    at.session_state["tl_step"] = steps[1]  # what the control's move sets (tests/browser moves it)
    at.run()
    no_errors(at)
    assert f"at step {steps[1]}" in _titled(at, "probe's first line")["layout"]["title"]["text"]
    assert steppers(at)[0]["index"] == 1
    assert at.query_params["tl_step"] in ([str(steps[1])], str(steps[1]))
    at.selectbox(key="tl_role").set_value("previous_token").run()
    no_errors(at)
    assert any("previous token score" in str(a.get("text")) for spec in specs(at)
               for a in spec["layout"].get("annotations", []))
    assert np.isfinite(job.timeline[-1].accuracy)


def test_the_positional_encoding_page_says_a_learned_table_is_not_drawn_and_starts_with_the_papers():
    at = open_page("positional_encoding", {"weights": "induction"})
    no_errors(at)
    assert "learned table" in at.info[0].value
    assert [header.value for header in at.header][0].startswith("Sinusoidal")


def test_the_why_button_opens_the_induction_heads_score_terms_where_a_layer_0_head_wins():
    at = open_page("induction", {"ind_count": "50"})
    at.button(key="ind_why").click().run()
    no_errors(at)
    assert at.session_state["view"] == "Score terms" and at.session_state["layer"] == 1
    terms = specs(at)[1]
    bars = [t for t in terms["data"] if t["type"] == "bar"][0]
    largest = bars["y"][int(np.argmax(decode(bars["x"])))]
    assert largest in ("L0H0", "L0H1", "L0H3"), (largest, bars["y"])


def test_the_induction_pages_sidebar_shows_no_model_controls_it_does_not_run():
    """The page reads the shipped induction model whatever the sidebar says: its Weights ("Seeded random weights"),
    d_model, heads and lines showed values the page never ran with. It keeps the device, which it runs on."""
    at = open_page("induction", {"ind_count": "50"})
    no_errors(at)
    shown = {widget.key for widget in [*at.sidebar.select_slider, *at.sidebar.slider, *at.sidebar.selectbox,
                                       *at.sidebar.text_area]}
    assert not shown & {"d_model", "heads", "layers", "seq_len", "weights", "src"}, shown
    assert at.sidebar.radio(key="device") and any("induction model" in c.value for c in at.sidebar.caption)


@functools.cache
def short_induction_run():
    """Snapshots of a 6-step induction run (one a process) and its spec."""
    from transformer.training.train import TrainSpec, train

    spec = TrainSpec.for_task("induction", steps=6)
    return tuple(train(spec, timeline_every=2, device="/CPU:0").timeline), spec


def _timeline_while(finished: bool) -> None:  # an AppTest script: the Train page's timeline of a job
    from types import SimpleNamespace

    import streamlit as st
    from test_app_induction import short_induction_run

    from ui.training_timeline import timeline_view

    shots, spec = short_induction_run()
    timeline_view(SimpleNamespace(finished=st.session_state.finished, timeline=list(shots), key="run", spec=spec))


def test_while_training_the_timeline_sends_the_shown_steps_grid_alone_then_every_steps():
    """Every snapshot's grid is ~0.3 MB (the probe line's every head): a running job's page, redrawn every second,
    sent them all again each time (14 MB a second at 41 snapshots, which the browser fell behind on). While the job
    runs the grid is the shown step's alone; when it is done, every step's, scrubbed in the browser."""
    at = AppTest.from_function(_timeline_while, args=(False,), default_timeout=120)
    at.session_state["finished"] = False
    at.run()
    no_errors(at)
    timeline, grid = (json.loads(payload) for payload in chart_payloads(at))
    assert len(timeline["frames"]) == 4 and "frames" not in grid  # steps 0, 2, 4, 6
    assert "at step 6" in grid["figure"]["layout"]["title"]["text"]  # the latest, followed as it grows
    at.session_state["finished"] = True
    at.run()
    no_errors(at)
    timeline, grid = (json.loads(payload) for payload in chart_payloads(at))
    titles = [frame["layout"]["title"]["text"] for frame in grid["frames"]]
    assert [f"at step {step}" in title for step, title in zip((0, 2, 4, 6), titles)] == [True] * 4
    assert grid["index"] == 3
