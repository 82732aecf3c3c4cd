"""What you see is what runs: each page's controls show the values its one run used, and its numbers agree."""

from __future__ import annotations

from app_support import no_errors, open_page, specs


def _texts(at) -> str:
    return " ".join(str(element.value) for kind in ("caption", "markdown", "info", "warning", "error")
                    for element in getattr(at, kind))


def test_decode_top_k_above_the_vocabulary_samples_and_says_it_keeps_every_token():
    at = open_page("decode", {"weights": "reverse", "dec_src": "a b c d", "dec_mode": "sampled", "dec_top_k": "20"})
    no_errors(at)
    assert not at.error, [e.value for e in at.error]
    assert "keeps every token" in _texts(at)


def test_the_neuron_view_with_alibi_adds_the_bias_as_its_own_term():
    at = open_page("attention", {"view": "Neuron view", "positions": "alibi", "focus": "3"})
    no_errors(at)
    assert "ALiBi's bias" in _texts(at)
    title = next(spec for spec in specs(at) if "softmax → weight" in str(spec["layout"].get("title")))
    assert "+ ALiBi bias" in str(title["layout"]["title"])
