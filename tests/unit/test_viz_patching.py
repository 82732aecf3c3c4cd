"""The Patching page's map (viz/patching.py): restored shares on a fixed −1…1 scale, or, when the clean − corrupted
gap is too small to divide by, each patched run's raw change on a scale of its own (issue 87, item 20)."""

import numpy as np

from transformer.analysis.patching import MIN_PATCH_GAP, gap_too_small, normalised
from viz.patching import patch_map_figure

ROWS, COLUMNS, CELLS = ("L0",), ("H0", "H1"), [["L0 H0", "L0 H1"]]


def test_a_map_of_restored_shares_keeps_its_fixed_scale_and_names_the_gap():
    raw = np.array([[1.0, 0.5]])
    fig = patch_map_figure(normalised(raw, 1.0, 0.0), raw, ROWS, COLUMNS, CELLS, metric="logprob", title="t",
                           gap=(1.0, 0.0))
    trace = fig.data[0]
    assert (trace.zmin, trace.zmax) == (-1.0, 1.0) and "1 clean" in trace.colorbar.ticktext
    assert "clean − corrupted 1.000 − 0.000 = 1.000" in fig.layout.title.text


def test_a_gap_too_small_to_normalise_draws_the_raw_change():
    """Lines ranged from −0.003 to 1.05: divided by 0.003, a patch's float noise read as tens of percent."""
    assert gap_too_small(0.010, 0.008) and not gap_too_small(1.0, 0.0) and MIN_PATCH_GAP > 0.002
    raw = np.array([[0.0105, 0.0070]])
    fig = patch_map_figure(normalised(raw, 0.010, 0.008), raw, ROWS, COLUMNS, CELLS, metric="logprob", title="t",
                           gap=(0.010, 0.008), normalise=False)
    z = np.asarray(fig.data[0].z, float)
    np.testing.assert_allclose(z, raw - 0.008)  # the change from the corrupted run, not a share of the gap
    assert fig.data[0].zmax == -fig.data[0].zmin == np.abs(raw - 0.008).max()
    assert "too small to normalise" in fig.layout.title.text and fig.data[0].colorbar.title.text == "change"


def test_the_three_runs_titles_take_two_lines_so_three_fit_a_phone():
    """Each run's title is its name over its restored share: three side by side fit 390 px (one line each overlapped
    there: "clean: restored +100%" is wider than a third of a phone)."""
    from viz.patching import three_runs_figure

    weights = np.full((2, 3, 3), 1 / 3)
    fig = three_runs_figure([weights] * 3, ["a", "b", "c"], ["a", "b", "c"], ("clean", "patched", "corrupted"),
                            (1.0, 0.5, 0.0), 1, "L0")
    titles = [annotation.text for annotation in fig.layout.annotations][:3]
    assert titles == ["clean<br>restored +100%", "patched<br>restored +50%", "corrupted<br>restored +0%"], titles
