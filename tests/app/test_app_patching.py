"""The Patching page through AppTest: a map drawn from the shipped models, its controls in the link, a cell's three
runs opened from the link, controls that follow the model, and bad input said without a traceback."""

import numpy as np
import pytest
from app_support import decode, no_errors, open_page, specs

pytestmark = pytest.mark.app


def _titled(at, part):
    return next(spec for spec in specs(at) if part in str(spec["layout"].get("title", {}).get("text", "")))


def test_the_dates_heads_map_is_drawn_on_a_diverging_scale_with_named_cells():
    at = open_page("patching", {"weights": "dates", "pt_part": "day"})
    no_errors(at)
    spec = _titled(at, "each head's output<br>patched alone")
    heatmap = spec["data"][0]
    values = decode(heatmap["z"])
    assert values.shape == (6, 4) and heatmap["zmid"] == 0 and heatmap["zmin"] == -1 and heatmap["zmax"] == 1
    assert list(heatmap["y"])[0] == "encoder L0" and spec["layout"]["meta"]["click"]
    assert "cross L1 H0" in str(heatmap["customdata"]) and "logit difference" in str(heatmap["customdata"])
    assert np.nanmax(values) > 0.1  # the last cross-attention layer carries some of the day
    text = " ".join(m.value for m in at.markdown)
    assert "**Clean**" in text and "**Corrupted**" in text


def test_the_stream_map_and_an_opened_cell_come_from_the_link():
    at = open_page("patching", {"weights": "dates", "pt_part": "year", "pt_map": "stream", "pt_row": "2",
                                "pt_col": "0"})
    no_errors(at)
    stream = decode(_titled(at, "the encoder stream<br>patched at one")["data"][0]["z"])
    assert stream.shape[0] == 3 and stream.max() > 0.3
    runs = _titled(at, "in the three runs")
    assert [t["text"].split("<br>")[0] for t in runs["layout"]["annotations"][:3]] == ["clean", "patched", "corrupted"]
    assert at.query_params["pt_map"] in ("stream", ["stream"])


def test_an_induction_path_map_names_every_sender_into_the_receivers_key():
    at = open_page("patching", {"weights": "induction", "pt_map": "path", "pt_rhead": "1"})
    no_errors(at)
    spec = _titled(at, "each sender alone<br>into decoder L1 H1 K")
    assert list(spec["data"][0]["x"]) == ["token", "position", "L0H0", "L0H1", "L0H2", "L0H3", "bias",
                                          "all together"]
    options = at.selectbox(key="pt_metric").options
    assert options[1:] == ["the last layer's weight on the token after the earlier occurrence",
                           "log-probability of the clean answer"]
    assert len(set(options)) == len(options)  # a default's label is its own: a widget tells options by their labels


def test_the_metric_and_the_part_follow_the_model():
    at = open_page("patching", {"weights": "dates", "pt_part": "month", "pt_metric": "logit_diff"})
    no_errors(at)
    at.sidebar.selectbox(key="weights").set_value("induction").run()
    no_errors(at)
    assert at.selectbox(key="pt_metric").value == "" and at.session_state["pt_part"] == ""
    assert not [radio for radio in at.radio if radio.key == "pt_part"]


def test_random_weights_offer_the_patchable_models_and_a_button_opens_one():
    at = open_page("patching")
    no_errors(at)
    assert "Patching needs a trained model" in " ".join(i.value for i in at.info)
    labels = [button.label for button in at.button if button.key and button.key.startswith("patch_with_")]
    assert labels[:2] == ["Patch dates", "Patch induction"] and len(labels) == 6, labels
    at.button(key="patch_with_induction").click().run()
    no_errors(at)
    assert _titled(at, "each head's output<br>patched alone")
    assert at.query_params["weights"] in ("induction", ["induction"])


def test_bad_lines_are_said_and_the_page_runs():
    at = open_page("patching", {"weights": "copy", "pt_clean": "a b c", "pt_corrupt": "a b"})
    assert "as many tokens" in " ".join(e.value for e in at.error) and not at.exception
    at = open_page("patching", {"weights": "copy", "pt_clean": "a b <script>", "pt_metric": "bogus"})
    assert not at.exception and "pt_metric='bogus'" in " ".join(w.value for w in at.warning)
    assert "\\<script\\>" in " ".join(e.value for e in at.error)  # escaped: drawn as text
