"""The Heads page and ablation through AppTest: roles over many lines, the importance map, the ablation controls
in the URL and on every page, and bad input."""

import numpy as np
import pytest
from app_support import heatmaps, no_errors, open_page, specs

from ui import link_values

pytestmark = pytest.mark.app


def _spec(at, title_part):
    return next(spec for spec in specs(at) if title_part in str(spec["layout"].get("title", {}).get("text", "")))


def test_heads_page_scores_every_role_over_repeated_tokens_and_names_the_strongest():
    at = open_page("heads", {"roles_lines": "repeated", "roles_count": "8", "roles_pattern": "window"})
    no_errors(at)
    roles = _spec(at, "role scores")
    grids = heatmaps(roles)
    assert len(grids) == 6 and all(grid.shape == (2, 4) for grid in grids)  # five roles and the window
    finite = np.concatenate([grid[~np.isnan(grid)] for grid in grids])
    assert ((finite >= 0) & (finite <= 1 + 1e-6)).all()
    assert "8 lines of 20 positions" in roles["layout"]["title"]["text"]
    assert any("over 8 lines" in trace["hovertemplate"] for trace in roles["data"])
    assert sum(button.label.startswith("L") for button in at.button) >= 15  # three heads a role, each a button
    assert _spec(at, "how far and how spread")


def test_a_strongest_head_opens_its_layer_on_the_attention_page_with_the_scored_lines():
    at = open_page("heads", {"roles_lines": "repeated", "roles_count": "4", "focus": "3"})
    button = next(button for button in at.button if button.key and button.key.startswith("open_induction"))
    layer = int(button.key.split("_")[-2])
    at = button.click().run()
    no_errors(at)
    assert at.session_state["layer"] == layer and at.session_state["seq_len"] == 20
    assert at.session_state["focus"] == 3  # the focus is kept
    assert at.session_state["src"].splitlines()[0].split()[:10] == at.session_state["src"].splitlines()[0].split()[10:]


def test_cross_attention_has_no_token_roles_and_no_distance_only_entropy():
    at = open_page("heads", {"stack": "cross"})
    no_errors(at)
    assert any("no token roles" in info.value and "no distance" in info.value for info in at.info)
    assert len(specs(at)) == 1 and len(heatmaps(specs(at)[0])) == 1  # entropy, on 0 to log2 N_k bits
    assert "query_key" in [link.proto.page for link in at.get("page_link")]


def test_the_importance_map_of_a_trained_model_measures_every_head_and_can_ablate_them():
    at = open_page("heads", {"weights": "reverse", "imp_count": "50"})
    no_errors(at)
    assert any(m.value.startswith("The task's examples") or "examples" in str(m) for m in at.radio)
    measure = next(button for button in at.button if button.label.startswith("Measure all 24 heads"))
    at = measure.click().run()
    no_errors(at)
    table = at.dataframe[-1].value
    assert len(table) == 5 and (table["accuracy change (points)"].iloc[0] <= table["accuracy change (points)"]).all()
    grid = _spec(at, "what ablating each head costs")
    assert len(heatmaps(grid)) == 6  # accuracy and loss for each of the three stacks
    ablate = next(button for button in at.button if button.label.startswith("Ablate the"))
    at = ablate.click().run()
    no_errors(at)
    assert at.session_state["ablate"] and at.query_params["ablate"]
    assert any("ablated in the sidebar" in info.value for info in at.info)


def test_random_weights_say_how_to_measure_importance():
    at = open_page("heads")
    assert any("Pick a trained model" in m.value for m in at.markdown)


def test_ablation_in_the_url_reaches_every_page_and_the_link():
    plain = open_page("attention", {"stack": "encoder", "layer": "1"})
    ablated = open_page("attention", {"stack": "encoder", "layer": "1", "ablate": "e0.1 e0.2", "ablation": "mean"})
    no_errors(ablated)
    assert ablated.session_state["ablate"] == ["e0.1", "e0.2"] and ablated.session_state["ablation"] == "mean"
    assert ablated.query_params["ablate"] == "e0.1 e0.2"
    assert not np.allclose(heatmaps(specs(plain)[0])[0], heatmaps(specs(ablated)[0])[0])
    assert ablated.sidebar.multiselect[0].value == ["e0.1", "e0.2"]


def test_a_trained_models_predictions_follow_its_ablated_heads():
    plain = open_page("attention", {"weights": "reverse"})
    ablated = open_page("attention", {"weights": "reverse", "ablate": "c0.0 c0.1 e1.0"})
    no_errors(ablated)
    assert plain.main.expander[0].label != ablated.main.expander[0].label  # "Predictions …: k of n right"


def test_decode_with_mean_ablation_decodes_with_the_pages_means():
    at = open_page("decode", {"weights": "dates", "ablate": "d0.1", "ablation": "mean"})
    no_errors(at)
    assert not at.error, [error.value for error in at.error]


@pytest.mark.parametrize("query, says", [
    ({"ablate": "e48.0"}, "Ignored the link's ablate='e48.0'"),  # past any model's layers (a real one has 30)
    ({"ablate": "e9.0"}, "This model has no encoder L9 H0"),  # a layer a real model has, this one not
    ({"ablate": "x0.0"}, "is not a head such as e0.1"),
    ({"ablate": "e1.7"}, "This model has no encoder L1 H7"),
    ({"ablation": "half"}, "Ignored the link's ablation='half'"),
])
def test_bad_ablations_in_a_link_get_a_message(query, says):
    at = open_page("attention", query)
    no_errors(at)
    assert any(says in warning.value for warning in at.warning), [w.value for w in at.warning]


def test_ablating_every_head_keeps_one_and_says_so():
    every = " ".join(link_values.head_code(stack, layer, head) for stack in ("encoder", "decoder", "cross")
                     for layer in range(2) for head in range(4))
    at = open_page("attention", {"ablate": every})
    no_errors(at)
    assert len(at.session_state["ablate"]) == 23
    assert any("nothing to attend" in warning.value for warning in at.warning)


def test_statistics_and_the_model_view_name_each_heads_strongest_role():
    at = open_page("attention", {"view": "Statistics"})
    roles = at.dataframe[0].value["role"]
    assert len(roles) == 4 and all(role == "—" or role.split()[-1].replace(".", "").isdigit() for role in roles)
    at = open_page("attention", {"view": "Model view"})
    model_view = specs(at)[-1]
    assert any(" · " in str(trace.get("name", "")) or " · " in str(trace.get("hovertemplate", ""))
               for trace in model_view["data"])


def test_the_dot_product_lab_reads_the_ablated_models_inputs():
    plain = open_page("dot_product_lab", {"stack": "encoder", "layer": "1"})
    ablated = open_page("dot_product_lab", {"stack": "encoder", "layer": "1", "ablate": "e0.0 e0.1"})
    no_errors(ablated)
    assert not np.allclose(heatmaps(specs(plain)[0])[0], heatmaps(specs(ablated)[0])[0])
    first_layer = open_page("dot_product_lab", {"stack": "encoder", "layer": "0", "ablate": "e0.0 e0.1"})
    same = open_page("dot_product_lab", {"stack": "encoder", "layer": "0"})
    np.testing.assert_allclose(heatmaps(specs(first_layer)[0])[0], heatmaps(specs(same)[0])[0])


def test_the_query_key_space_of_the_chosen_head_is_drawn_and_its_controls_are_in_the_link():
    at = open_page("query_key", {"roles_lines": "repeated", "roles_count": "8", "qk_layer": "1", "qk_head": "2"})
    no_errors(at)
    space = _spec(at, "queries and")
    assert space["layout"]["title"]["text"].startswith("encoder layer 1 head 2: 160 queries and 160 keys")
    assert [trace["type"] for trace in space["data"]] == ["scatter", "scatter"]  # WebGL from 2,000 points
    at.radio(key="qk_colour").set_value("side").run()
    no_errors(at)
    assert at.query_params["qk_colour"] in (["side"], "side")
    at.slider(key="qk_head").set_value(3).run()
    assert "head 3:" in _spec(at, "queries and")["layout"]["title"]["text"]
    bad = open_page("query_key", {"qk_colour": "rainbow", "qk_head": "9"})
    no_errors(bad)
    assert "qk_colour='rainbow'" in " ".join(w.value for w in bad.warning)
    assert "head 3:" in _spec(bad, "queries and")["layout"]["title"]["text"]  # clamped to the model's last head


def test_a_decoder_only_trained_model_is_measured_on_the_induction_page():
    at = open_page("heads", {"weights": "induction"})
    no_errors(at)
    assert "app_pages/induction.py" in str([link.proto.page for link in at.get("page_link")]) or \
        "induction" in [link.proto.page for link in at.get("page_link")]
    space = open_page("query_key", {"weights": "induction", "roles_lines": "examples", "roles_count": "4",
                                    "qk_layer": "1"})
    no_errors(space)
    assert _spec(space, "decoder layer 1 head 0")
    outside = open_page("query_key", {"weights": "hub:gpt2_base_en"})
    assert not outside.exception
