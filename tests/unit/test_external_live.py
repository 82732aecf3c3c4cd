"""Models from outside as the app runs them: the shared registry (presets by name, uploads by hash, a memory
budget) and `run_live` on a model from outside, against the model's own weights."""

from dataclasses import replace

import keras
import numpy as np
import pytest
from hub_support import bert_preset, functional_model, gpt2_preset

from transformer import LiveConfig, run_live
from transformer.external import UPLOAD_LIMIT_ENV
from transformer.external.registry import EXTERNAL, PRESETS_DIR_ENV, ExternalRegistry, check_key

pytest.importorskip("keras_hub")


@pytest.fixture
def presets(tmp_path, monkeypatch):
    """A folder of tiny presets served by name (the path a preset name takes on a server offline)."""
    gpt2_preset(tmp_path / "tiny_gpt2")
    bert_preset(tmp_path / "tiny_bert")
    monkeypatch.setenv(PRESETS_DIR_ENV, str(tmp_path))
    EXTERNAL._models.clear()
    yield tmp_path
    EXTERNAL._models.clear()


def _keras_bytes(tmp_path) -> bytes:
    path = tmp_path / "mine.keras"
    functional_model().save(path)
    return path.read_bytes()


def test_an_upload_is_kept_by_its_hash_and_another_session_opens_it_by_that_hash(tmp_path):
    registry = ExternalRegistry(upload_dir=tmp_path / "uploads")
    data = _keras_bytes(tmp_path)
    key = registry.add_upload(data, "mine.keras")
    assert key.startswith("upload:") and len(key) == 7 + 64 and check_key(key) == key
    assert registry.add_upload(data, "again.keras") == key  # the same bytes: the same model, loaded once
    another = ExternalRegistry(upload_dir=tmp_path / "uploads")  # a restart keeping the folder, or a replica
    _, weights = another.get(key).attention("3 1 4")
    np.testing.assert_allclose(weights, registry.get(key).attention("3 1 4")[1])
    with pytest.raises(ValueError, match="not on this server"):
        ExternalRegistry(upload_dir=tmp_path / "elsewhere").get(key)


def test_bad_uploads_are_refused_with_a_message_and_nothing_is_kept(tmp_path, monkeypatch):
    registry = ExternalRegistry(upload_dir=tmp_path / "uploads")
    with pytest.raises(ValueError, match="broken.keras is not a .keras file"):
        registry.add_upload(b"\x00" * 100, "broken.keras")
    assert not list((tmp_path / "uploads").glob("*.keras"))
    monkeypatch.setenv(UPLOAD_LIMIT_ENV, "0.0001")
    with pytest.raises(ValueError, match="big.keras is .* MB; the limit is 0 MB"):
        registry.add_upload(b"\x00" * 1000, "big.keras")


@pytest.mark.slow
def test_models_are_held_under_a_budget_least_recently_used_out_first(presets, tmp_path):
    registry = ExternalRegistry(budget_bytes=1, upload_dir=tmp_path / "uploads")  # room for one model only
    registry.get("hub:tiny_gpt2")
    registry.get("hub:tiny_bert")
    assert "hub:tiny_gpt2" not in registry and "hub:tiny_gpt2" in registry.evicted
    registry.get("hub:tiny_gpt2")  # asked for again: loaded again
    assert "hub:tiny_gpt2" in registry and "hub:tiny_gpt2" not in registry.evicted


@pytest.mark.parametrize("weights", ["hub:../etc", "hub:https://x", "upload:abc", "upload:" + "g" * 64])
def test_a_key_names_a_preset_or_a_hash_never_a_path(weights):
    with pytest.raises(ValueError, match="hub:<keras-hub preset name>"):
        check_key(weights)


def test_run_live_draws_a_causal_model_from_outside_line_by_line(presets):
    config = LiveConfig(weights="hub:tiny_gpt2", architecture="decoder-only", source_text="a b c a b\na b",
                        seq_len=6)
    result = run_live(config, stacks=("decoder",))
    weights = result.attention["decoder"]  # (L, B, H, N, N)
    assert weights.shape == (2, 2, 2, 6, 6) and (result.layers, result.heads) == (2, 2)
    assert result.target_tokens[1] == ("a", "Ġb", "<pad>", "<pad>", "<pad>", "<pad>")
    model = EXTERNAL.get("hub:tiny_gpt2")
    np.testing.assert_allclose(weights[:, 0, :, :5, :5], model.attention("a b c a b")[1], atol=1e-6)
    np.testing.assert_allclose(weights[:, 1, :, :2, :2], model.attention("a b")[1], atol=1e-6)
    assert np.abs(weights[:, 1, :, 2:]).max() == 0 and np.abs(weights[:, 1, :, :, 2:]).max() == 0  # padding
    real = np.array([True] * 5 + [False])  # padding's query row and key column are blocked: never run
    assert result.applied_masks["decoder"][0].tolist() == (np.tril(np.ones((6, 6), bool)) & real[None]
                                                           & real[:, None]).tolist()


@pytest.mark.slow
def test_run_live_draws_a_bidirectional_model_and_refuses_what_it_cannot_do(presets):
    config = LiveConfig(weights="hub:tiny_bert", architecture="encoder-only", source_text="the cat sat", seq_len=4)
    result = run_live(config, stacks=("encoder",))
    assert result.attention["encoder"].shape == (2, 1, 2, 4, 4) and result.source_tokens[0][:3] == ("the", "cat",
                                                                                                     "sat")
    with pytest.raises(ValueError, match="a bidirectional encoder: architecture='encoder-only'"):
        run_live(replace(config, architecture="decoder-only"), stacks=("decoder",))
    with pytest.raises(ValueError, match="read as it is"):
        run_live(replace(config, ablate=(("encoder", 0, 0),)))
    with pytest.raises(ValueError, match="up to 512 tokens"):
        run_live(replace(config, seq_len=600))
    with pytest.raises(ValueError, match="weights='hub:/etc'"):
        run_live(replace(config, weights="hub:/etc"))
    keras.utils.clear_session()


@pytest.mark.slow
def test_a_causal_model_from_outside_decodes_greedily_from_its_own_logits(presets):
    from transformer.live.decode import decode  # noqa: PLC0415

    config = LiveConfig(weights="hub:tiny_gpt2", architecture="decoder-only")
    run = decode(config, "a b c", max_steps=4)
    model = EXTERNAL.get("hub:tiny_gpt2")
    ids = list(model.token_ids("a b c"))
    for step in run.steps:
        logits, weights = model.logits_and_weights(ids)
        np.testing.assert_allclose(step.probabilities, np.exp(logits[-1] - logits[-1].max()) / np.exp(
            logits[-1] - logits[-1].max()).sum(), atol=1e-5)
        np.testing.assert_allclose(step.self_attention, weights[:, :, -1], atol=1e-6)
        ids.append(int(np.argmax(logits[-1])))
        assert step.chosen == model.tokenizer.id_to_token(ids[-1])
    assert len(run.steps) == 4 and run.prompt == ("a", "Ġb", "Ġc")
    with pytest.raises(ValueError, match="does not write text"):
        decode(LiveConfig(weights="hub:tiny_bert", architecture="encoder-only"), "the cat")


def _mixed_model():
    """Two 4-head MultiHeadAttention layers, the second with use_causal_mask=True."""
    keras.utils.set_random_seed(3)
    ids = keras.Input((None,), dtype="int32")
    x = keras.layers.Embedding(20, 16)(ids)
    x = keras.layers.MultiHeadAttention(num_heads=4, key_dim=4, name="open")(x, x)
    x = keras.layers.MultiHeadAttention(num_heads=4, key_dim=4, name="causal")(x, x, use_causal_mask=True)
    return keras.Model(ids, keras.layers.Dense(20)(x))


def test_an_uploaded_model_passes_the_checks_with_padding_and_a_causal_layer_drawn_masked(tmp_path):
    """#52.3: padded query rows are left out of the checks, and each layer's own mask (the second is causal) is
    the mask drawn and checked."""
    from transformer.analysis.measures import attention_checks  # noqa: PLC0415

    path = tmp_path / "mixed.keras"
    _mixed_model().save(path)
    key = EXTERNAL.add_upload(path.read_bytes(), "mixed.keras")
    assert EXTERNAL.get(key).layer_causal == (False, True)
    config = LiveConfig(weights=key, architecture="encoder-only", source_text="3 1 4 1 5\n2 7", seq_len=16)
    result = run_live(config, stacks=("encoder",))
    for line, length in ((0, 5), (1, 2)):
        weights = result.attention["encoder"][:, line]  # (L, H, N, N)
        assert all(check.passed for check in attention_checks(weights, result.masks_of("encoder", line))), line
        open_mask, causal_mask = (result.mask_of("encoder", line, layer) for layer in (0, 1))
        real = np.zeros((16, 16), bool)
        real[:length, :length] = True
        assert (open_mask == real).all() and (causal_mask == (real & np.tril(np.ones((16, 16), bool)))).all()


def test_uploads_live_in_the_data_directory_and_a_changed_file_is_named_and_set_aside(tmp_path, monkeypatch):
    monkeypatch.delenv("ATTENTION_LAB_UPLOAD_DIR", raising=False)
    monkeypatch.setenv("ATTENTION_LAB_DATA_DIR", str(tmp_path / "data"))
    registry = ExternalRegistry()
    assert registry.upload_dir == tmp_path / "data" / "uploads"  # shared by replicas, kept across restarts
    key = registry.add_upload(_keras_bytes(tmp_path), "mine.keras")
    path = registry.upload_dir / f"{key.split(':')[1]}.keras"
    path.write_bytes(path.read_bytes()[:-10])  # changed on disk
    with pytest.raises(ValueError, match=r"The uploaded model [0-9a-f]{12}… kept on this server is damaged") as said:
        ExternalRegistry().get(key)  # a restarted server reads it again, checking its hash
    assert str(tmp_path) not in str(said.value) and "uploads folder" in str(said.value)  # no server path (issue 86)
    assert not path.exists() and path.with_name(f"{key.split(':')[1]}.set-aside").exists()  # never deleted
