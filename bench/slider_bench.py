"""The slider benchmark: app pages and the trivial floor moved in turns in headless Chromium."""

from __future__ import annotations

import collections
from dataclasses import dataclass, field

from moves import CHART, move_control
from report import percentile, row

MOVES_NOTE = ("Slider moves: sequence length and pad symbols take a new value every time (the engine "
              "computes each one); heads and d_model go back and forth between two built models; each page "
              "is looked at for 2.5 s after it loads, before the first move. The pages take turns (a few moves "
              "each, four rounds), so a slower spell of the machine falls on the floor and the app alike.")

ROUNDS = 4  # the pages take turns this many times; a default page moves one of its four controls a round


@dataclass
class _Lane:
    """One page the slider benchmark moves: its row, its moves and the latencies measured so far."""
    measure: str
    url: str
    kinds: tuple[str, ...] = ("seq_len",)
    look_first: bool = False  # the app's pages: a pause after loading, as a person would make
    target: str = ""
    times: list = field(default_factory=list)
    made: collections.Counter = field(default_factory=collections.Counter)  # moves made so far, by kind
    page: object = None


def _open_lane(browser, lane: _Lane) -> None:
    from browser_support import wait_idle

    lane.page = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
    lane.page.goto(lane.url)
    wait_idle(lane.page)
    lane.page.wait_for_function(f"() => {CHART} && {CHART}._fullData", timeout=120_000)
    if lane.look_first:
        # A person looks at a page before moving a slider; the engine uses such a pause (1 s without
        # requests) to trace the new page's graphs. Moves right after a load would run eagerly.
        lane.page.wait_for_timeout(2_500)


def _lanes(floor_url: str, url: str, count: int) -> list[_Lane]:
    lanes = [_Lane("trivial one-chart page, st.plotly_chart (framework floor)", f"{floor_url}/?chart=plotly_chart"),
             _Lane("trivial one-chart page, this app's chart component (framework floor)",
                   f"{floor_url}/?chart=component")]
    for page_name, seed in (("attention", 0), ("masks", 1)):  # another seed: masks recompute too
        lanes.append(_Lane(f"{page_name}, default ({count // ROUNDS * ROUNDS} moves: seq_len, heads, d_model, pads)",
                           f"{url}/{page_name}?seed={seed}", kinds=("seq_len", "heads", "d_model", "pads"),
                           look_first=True, target="p50 ≤ 300 ms and ≤ 2× floor; p90 ≤ 500 ms"))
        # At N = 512 the pad symbols move: the sequence-length slider's stops there are 32 apart
        # (ui.choices.SEQ_LEN_CHOICES), and a new set of pads is a new computation at the same length.
        lanes.append(_Lane(f"{page_name}, N=512, 8 heads ({count} moves: pads)",
                           f"{url}/{page_name}?seq_len=512&heads=8&d_model=64&seed={seed}", kinds=("pads",),
                           look_first=True, target="p50 ≤ 800 ms"))
    text = "+".join(str(i % 10) for i in range(64))  # 64 tokens: no padding
    lanes.append(_Lane(f"attention, head view N=64 ({count // ROUNDS * ROUNDS} moves: focus, head toggle)",
                       f"{url}/attention?seq_len=64&view=Head+view&src={text}&tgt=1+2+3&seed=2",
                       kinds=("focus", "head_toggle", "focus", "head_toggle"), look_first=True,
                       target="p50 ≤ 300 ms and ≤ 2× floor; p90 ≤ 500 ms"))
    lanes.append(_Lane(f"attention, rollout N=512, 8 heads ({count} moves: pads)",
                       f"{url}/attention?seq_len=512&heads=8&d_model=64&view=Rollout&seed=3", kinds=("pads",),
                       look_first=True, target="p50 ≤ 800 ms"))
    long_text = "+".join(str(i % 10) for i in range(4096))  # 4096 tokens: the pads fall inside the line
    lanes.append(_Lane(f"attention, N=4096, 8 heads, 2 layers, block-wise ({count} moves: pads)",
                       f"{url}/attention?seq_len=4096&heads=8&d_model=64&layers=2&src={long_text}&tgt=1+2+3&seed=4",
                       kinds=("pads",), look_first=True, target="p50 ≤ 1.5 s"))
    return lanes


def _round_moves(lane: _Lane, count: int, round_index: int) -> tuple[str, int]:
    """The kind and number of moves ``lane`` makes in round ``round_index``: a default page moves one control a
    round (count // 4 moves), the others share ``count`` moves between the rounds."""
    if len(lane.kinds) == ROUNDS:
        return lane.kinds[round_index], count // ROUNDS
    return lane.kinds[0], count // ROUNDS + (round_index < count % ROUNDS)


def slider_latency(quick: bool):
    from browser_support import CHROMIUM, CHROMIUM_ARGS, streamlit_server
    from playwright.sync_api import sync_playwright

    count = 8 if quick else 30
    with (sync_playwright() as playwright, streamlit_server("bench/trivial_app.py") as floor_url,
          streamlit_server() as url):
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        lanes = _lanes(floor_url, url, count)
        for lane in lanes:
            _open_lane(browser, lane)
        for round_index in range(ROUNDS):
            for lane in lanes:
                kind, moves = _round_moves(lane, count, round_index)
                lane.page.bring_to_front()
                lane.times += move_control(lane.page, kind, moves, first=lane.made[kind])
                lane.made[kind] += moves
        browser.close()
    floor, own_floor = (percentile(lane.times, 50) for lane in lanes[:2])
    for lane in lanes:
        p50, p90 = percentile(lane.times, 50), percentile(lane.times, 90)
        figure = f"{p50 * 1e3:.0f} / {p90 * 1e3:.0f}"
        if lane.target:
            figure += f" ({p50 / floor:.1f}× floor; {p50 / own_floor:.1f}× the component's floor)"
        row("slider", f"{lane.measure} p50 / p90 ms", figure, lane.target)


