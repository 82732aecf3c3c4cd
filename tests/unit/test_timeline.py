"""Attention over training: the snapshots a run records on its probe batch, checked against the role scores of the
same model's attention computed again, and the induction task's phase change seen in them."""

import numpy as np
import pytest

from transformer.analysis.heads import batch_role_scores
from transformer.tasks import get_task
from transformer.training.next_token import read_ids
from transformer.training.saved_model import TrainSpec
from transformer.training.timeline import PROBE_LINES, make_probe, snapshot
from transformer.training.train import train
from ui.training_timeline import formed_at


@pytest.mark.slow  # it trains: 12 s of `make test-fast`
def test_a_run_snapshots_step_0_every_k_steps_and_the_last():
    seen = []
    result = train(TrainSpec.for_task("reverse", steps=25, d_model=16, num_heads=2, num_layers=1, d_ff=32),
                   timeline_every=10, on_snapshot=seen.append, device="/CPU:0")
    assert [shot.step for shot in result.timeline] == [0, 10, 20, 25] and seen == result.timeline
    shot = result.timeline[-1]
    assert set(shot.scores) == {"encoder", "decoder", "cross"} and shot.scores["encoder"]["induction"].shape == (1, 2)
    probe = make_probe("reverse", result.vocab)
    assert probe.src.shape[0] == PROBE_LINES
    assert shot.patterns["encoder"].shape == (1, 2, len(probe.tokens["encoder"]), len(probe.tokens["encoder"]))
    assert 0.0 <= shot.accuracy <= 1.0 and np.isnan(result.timeline[0].loss)
    assert train(TrainSpec.for_task("reverse", steps=3, d_model=16, num_heads=2, num_layers=1, d_ff=32),
                 device="/CPU:0").timeline == []


def test_a_snapshot_scores_the_probe_as_the_heads_measure_does():
    from transformer.training.pretrained import load_pretrained

    model = load_pretrained("induction", "/CPU:0")
    probe = make_probe("induction", model.vocab)
    shot = snapshot(model.model, probe, model.vocab, step=7, loss=1.5)
    _, attention = read_ids(model.model, probe.tgt)
    expected = batch_role_scores(attention, probe.tgt, probe.tgt != 0)
    np.testing.assert_allclose(shot.scores["decoder"]["induction"], expected["induction"])
    assert shot.step == 7 and shot.loss == 1.5 and shot.accuracy > 0.85
    n = len(probe.lines[0].tokens)
    np.testing.assert_allclose(shot.patterns["decoder"], attention[:, 0, :, :n, :n])


@pytest.mark.slow
def test_training_the_induction_task_shows_the_induction_score_rise_where_the_loss_drops():
    """The task's own settings; the score forms at step 400 here (350 -> 400), so 550 steps leave three snapshots
    after it (700 took 1.3× as long for the same answer)."""
    spec = TrainSpec.for_task("induction", steps=550)
    result = train(spec, timeline_every=50, device="/CPU:0")
    steps = [shot.step for shot in result.timeline]
    induction = np.stack([shot.scores["decoder"]["induction"] for shot in result.timeline])  # (T, L, H)
    formed = formed_at(steps, induction)
    assert formed is not None, [round(float(s.max()), 2) for s in induction]
    index = steps.index(formed)
    loss = np.array([shot.loss for shot in result.timeline])
    assert np.nanmean(loss[max(1, index - 3): index - 1]) - loss[index + 1:].mean() > 0.3
    assert result.timeline[-1].accuracy > 0.5 > result.timeline[1].accuracy
    assert get_task("induction").decoder_only


def test_the_probe_is_drawn_at_the_runs_lengths_and_says_what_its_accuracy_counts():
    """#52.5: the probe used the task's default lengths (3–10 for reverse) while the run trained on 3–8, so a model
    98.6 % right on fresh inputs of its lengths ended the timeline at 0.73–0.77."""
    from transformer.training.pretrained import load_pretrained

    model = load_pretrained("reverse", "/CPU:0")
    probe = make_probe("reverse", model.vocab, lengths=(3, 8))
    lengths = (probe.src != 0).sum(1)
    assert lengths.min() >= 3 and lengths.max() <= 8
    shot = snapshot(model.model, probe, model.vocab, step=600, loss=0.1)
    assert shot.accuracy > 0.95 and shot.measure == "token accuracy (teacher forced)"


def test_cross_attention_is_scored_on_the_tasks_alignment():
    from transformer.analysis.heads import alignment_score
    from transformer.training.pretrained import load_pretrained

    model = load_pretrained("reverse", "/CPU:0")
    probe = make_probe("reverse", model.vocab, lengths=(3, 8))
    shot = snapshot(model.model, probe, model.vocab, step=600, loss=0.1)
    assert set(shot.scores) == {"encoder", "decoder", "cross"} and set(shot.scores["cross"]) == {"alignment"}
    assert shot.scores["cross"]["alignment"].max() > 0.5  # reverse's cross-attention follows its alignment
    weights = np.zeros((1, 2, 1, 3, 4))  # (L, B, H, N_t, N_s)
    weights[0, 0, 0, [0, 1, 2], [3, 2, 0]] = [1.0, 0.5, 0.25]
    aligned = np.array([[3, 2, -1], [0, -1, -1]])  # (B, N_t): -1 where a target token has no source token
    np.testing.assert_allclose(alignment_score(weights, aligned), [[(1.0 + 0.5 + 0.0) / 3]])
