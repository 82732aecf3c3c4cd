"""AppTest: every page for every architecture and norm, from the URL; pages say which stacks a model lacks."""

import pytest
from app_support import no_errors, open_page, specs
from chart_support import chart_elements, step_caption

from ui.controls import STACK_NAMES

pytestmark = pytest.mark.app

PAGES = ["home", "masks", "positional_encoding", "attention", "dot_product_lab", "shapes", "cost", "decode", "train"]
OPTIONS = [
    {"arch": "decoder-only", "norm": "pre"},
    {"arch": "encoder-only", "d_ff": "0"},
    {"arch": "decoder-only", "d_ff": "0", "positions": "rope", "kv_heads": "2"},
    {"norm": "pre", "d_ff": "0"},
]


@pytest.mark.parametrize("page", PAGES)
@pytest.mark.parametrize("query", OPTIONS, ids=lambda query: ",".join(f"{k}={v}" for k, v in query.items()))
def test_every_page_runs_for_every_architecture(page, query):
    at = open_page(page, query)
    no_errors(at)
    assert not at.error, [e.value for e in at.error]
    assert not at.warning, [w.value for w in at.warning]  # the URL's values are all valid: nothing corrected
    for key, value in query.items():
        assert str(at.session_state[key]) == value
    if page in ("attention", "dot_product_lab", "shapes", "masks", "positional_encoding"):
        assert chart_elements(at)


@pytest.mark.parametrize("arch, stacks, absent", [
    ("decoder-only", ["decoder"], "no encoder and no cross-attention"),
    ("encoder-only", ["encoder"], "no decoder and no cross-attention"),
    ("encoder-decoder", ["encoder", "decoder", "cross"], None)])
def test_the_attention_page_offers_the_stacks_the_architecture_has(arch, stacks, absent):
    at = open_page("attention", {"arch": arch, "stack": "cross"})
    no_errors(at)
    assert list(at.radio(key="stack").options) == [STACK_NAMES[stack] for stack in stacks]
    assert at.session_state["stack"] == ("cross" if arch == "encoder-decoder" else stacks[0])
    captions = " ".join(c.value for c in at.caption)
    assert (absent in captions) if absent else "no cross-attention" not in captions


def test_a_decoder_only_model_continues_a_prompt_on_the_decode_page():
    at = open_page("decode", {"arch": "decoder-only", "norm": "pre", "dec_src": "1 2 3"})
    no_errors(at)
    assert "continues a prompt" in " ".join(m.value for m in at.markdown) and "continuation:" in step_caption(at)
    assert "No cross-attention" in " ".join(c.value for c in at.caption)
    assert len(specs(at)) >= 4  # look-ahead row, self-attention, distribution, cache
    at.radio(key="dec_mode").set_value("sampled").run()
    at.select_slider(key="dec_top_p").set_value(0.5).run()
    no_errors(at)
    assert at.query_params.get("dec_top_p") in ("0.5", ["0.5"])


def test_an_encoder_only_model_says_why_it_does_not_decode():
    at = open_page("decode", {"arch": "encoder-only"})
    no_errors(at)
    assert "encoder-only model has no decoder" in " ".join(i.value for i in at.info)


def test_choosing_a_trained_model_brings_the_architecture_back_to_its_own():
    at = open_page("attention", {"arch": "decoder-only", "norm": "pre"})
    at.selectbox(key="weights").set_value("reverse").run()
    no_errors(at)
    assert at.session_state["arch"] == "encoder-decoder" and at.session_state["norm"] == "post"
    assert not at.error, [e.value for e in at.error]


def test_a_link_to_a_trained_model_with_another_architecture_gets_a_message_not_a_traceback():
    at = open_page("attention", {"weights": "reverse", "arch": "decoder-only"})
    no_errors(at)
    assert "encoder-decoder with post-norm" in " ".join(e.value for e in at.error)
