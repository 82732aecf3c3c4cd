"""Every engine call of the door is priced before it runs (issue 86): a test walks `transformer.service` and fails on
any call that runs on the engine thread without a price; each price grows with the work it stands for, uses the
model's own shape (an outside model's heads, never the sidebar's), and a call priced past the light budget raises
`NeedsLane` where the engine thread is shared, never running there."""

import types

import pytest

from transformer import LiveConfig, service
from transformer.live.priced_calls import NeedsLane, PricedCall, shared_engine
from transformer.live.run_cost import LIGHT_SECONDS_ENV, MAX_GFLOP_ENV, RunCost
from transformer.runtime.engine_rate import RATE_ENV
from transformer.runtime.engine_thread import on_engine_thread


def unpriced(module) -> list[str]:
    """The names of ``module`` that run on the engine thread without a price."""
    return sorted(name for name, value in vars(module).items()
                  if getattr(value, "on_engine", False) and not isinstance(value, PricedCall))


def test_every_engine_call_of_the_door_has_a_price():
    assert unpriced(service) == []
    planted = types.ModuleType("planted")
    planted.sneaky = on_engine_thread(lambda config: config)
    planted.fair = PricedCall("fair", LiveConfig, lambda **_: RunCost(0.0, 0), lane=False)
    assert unpriced(planted) == ["sneaky"]


def test_every_laned_call_can_be_run_by_the_lane():
    from transformer.live.heavy import CALLS

    laned = {value.name: value.target for value in vars(service).values()
             if isinstance(value, PricedCall) and value.lane}
    assert laned and all(CALLS[name] == target for name, target in laned.items())


ROLES = LiveConfig(d_model=256, num_heads=1, num_layers=5, d_ff=1024, seq_len=512, architecture="encoder-only",
                   source_text="\n".join(["a b c d"] * 64))


def test_a_heads_link_is_priced_over_all_its_lines_not_a_chunk():
    """The probe's link: 64 lines at N = 512, which the roles study ran 16 at a time, each chunk under the light
    budget. Priced whole, it is four chunks' worth and heavy."""
    whole = service.head_roles.price(ROLES, "encoder")
    chunk = service.head_roles.price(ROLES.__class__(**{**ROLES.__dict__, "source_text": "\n".join(["a b c d"] * 16)}),
                                     "encoder")
    assert whole.flops == pytest.approx(4 * chunk.flops) and whole.calls == 4 and whole.heavy


@pytest.mark.parametrize("count", [1, 10])
def test_a_price_grows_with_the_work(count):
    small = service.decode.price(LiveConfig(architecture="decoder-only"), "a b c", max_steps=count)
    large = service.decode.price(LiveConfig(architecture="decoder-only"), "a b c", max_steps=count * 4)
    assert large.flops > 3 * small.flops and large.seconds() > small.seconds()
    one = service.faithfulness.price("reverse", count, 0, "/CPU:0")
    assert service.faithfulness.price("reverse", count * 4, 0, "/CPU:0").seconds() > 3 * one.seconds()


def test_a_trained_model_is_priced_by_its_own_shape_not_the_sidebars():
    sidebar = LiveConfig(weights="reverse", d_model=512, num_heads=16, num_layers=6, d_ff=2048, seq_len=8,
                         source_text="a b c")
    own = service.run_live.price(sidebar, stacks=("encoder",))
    assert "d_model 64" in own.what, own.what
    assert own.flops < service.run_live.price(LiveConfig(d_model=512, num_heads=16, num_layers=6, d_ff=2048,
                                                         seq_len=8, source_text="a b c"), stacks=("encoder",)).flops


def test_the_light_budget_is_engine_seconds_and_a_heavy_call_never_runs_on_the_shared_thread(monkeypatch):
    ran = []

    def work(config):
        ran.append(config)
        return "done"

    call = PricedCall("test_work", work, lambda config: RunCost(40e9, 1 << 20, "forty GFLOP", 1), lane=False)
    call.lane = True  # laned as the door's are, without letting the lane run a test's function
    monkeypatch.setenv(RATE_ENV, "20")  # 2 s at this rate
    with shared_engine(), pytest.raises(NeedsLane) as needs:
        call(LiveConfig())
    assert not ran and needs.value.cost.seconds() == pytest.approx(2.0, rel=0.05)
    assert needs.value.name == "test_work" and needs.value.args == (LiveConfig(),)
    monkeypatch.setenv(LIGHT_SECONDS_ENV, "5")
    with shared_engine():
        assert call(LiveConfig()) == "done" and ran  # light under a 5 s budget
    assert call(LiveConfig()) == "done"  # outside a shared engine (Python, a notebook): it runs as asked
    monkeypatch.setenv(MAX_GFLOP_ENV, "10")
    with shared_engine(), pytest.raises(ValueError, match="too large for a shared server"):
        call(LiveConfig())


def test_kept_measures_and_scores_cost_nothing(monkeypatch, tmp_path):
    from transformer.live import importance

    price = service.measure_ablation.price("reverse", (), 20, "zero", 0, "/CPU:0")
    assert price.flops > 0
    importance.keep_measure((1.0, 0.5), "reverse", (), 20, "zero", 0, "/CPU:0")
    assert service.measure_ablation.price("reverse", (), 20, "zero", 0, "/CPU:0").flops == 0
    assert service.measure_ablation("reverse", (), 20, "zero", 0, "/CPU:0") == (1.0, 0.5)


def test_a_small_run_timed_slower_than_the_large_one_never_makes_the_engine_look_a_thousand_times_faster(
        monkeypatch):
    """A test server printed "813,083 GFLOP/s" (its small pass's median, 64 ms, above the large one's): every price
    became ~0, and scoring six methods ran on the engine thread every session shares until a test gave up at 300 s.
    The arithmetic of the large pass is taken as at least a third of its time: the rate stays within 3× of the large
    pass's whole rate (1.8× here on a quiet host: 23 and 50 ms)."""
    from transformer.live import calibration
    from transformer.live.run_cost import live_cost
    from transformer.runtime import engine_rate

    kept = engine_rate.engine_rate()
    seconds = {calibration.SMALL.seq_len: 0.064, calibration.LARGE.seq_len: 0.050}
    monkeypatch.setattr(calibration, "_typical", lambda config, device, repeats: seconds[config.seq_len])
    try:
        rate = calibration.calibrate("cpu")
    finally:
        engine_rate.keep(kept)
    whole = live_cost(calibration.LARGE, calibration.LARGE_LINES).flops / 0.050 / 1e9
    assert whole <= rate.gflops <= 3 * whole, (rate.gflops, whole)
    assert rate.call_seconds == 0.064
