"""Load test: concurrent headless-Chromium sessions moving sliders against one `streamlit run`.

    python bench/load_test.py [--sessions 8] [--seconds 60] [--single-seconds 60]
                              [--pause 0.5-1.5] [--stress-seconds 30] [--write]

First one session alone (the reference), then N sessions at once, then N sessions that
never pause (a stress run), all on loopback against one server. The same paced runs, 1 and
N sessions, move the slider of the benchmark's trivial one-chart page (bench/trivial_app.py,
this app's chart component) on a server of its own, between the app's runs: the framework's
floor, what N Chromium clients on this machine allow any Streamlit page. A user pauses for a
random 0.5–1.5 s after each redraw, to look at it. The clients run at nice 19 (and
Chromium's session group too) so that they do not starve the server they measure.
Each session types its own source text and checks, after every move, that its
chart shows its own tokens only (sessions never see each other's state). A move
is a key press on the sequence-length slider; its latency runs until the chart
shows the new length. Chromium's CPU time while the sessions move (report.chromium_cpu_seconds),
per move, says what drawing a move costs the clients. Prints a table; --write puts it into BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import random
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "support")]
sys.path.insert(0, str(ROOT / "bench"))

from browser_support import CHROMIUM, CHROMIUM_ARGS, streamlit_server  # noqa: E402
from chart_support import FIRST_PLOT as CHART  # noqa: E402
from report import (  # noqa: E402
    chromium_cpu_seconds,
    lower_priority_of_other_sessions,
    machine_busy_seconds,
    percentile,
    process_cpu_seconds,
    process_rss_mb,
    steal_share,
    stolen_seconds,
    write_section,
)
from wire_proxy import WireProxy, answer_times  # noqa: E402

LABELS = f"() => ({CHART}?._fullData?.[0]?.y || []).join(' ')"
ERRORS = "[data-testid='stException'], [data-testid='stAlertContentError']"

# Waits are event-driven: a MutationObserver re-checks the condition whenever the page changes,
# so a waiting client costs no CPU. (Playwright's wait_for_function polls on every animation
# frame, which keeps eight headless renderers drawing 60 frames a second each.)
WAIT_UNTIL = """([condition, timeoutMs]) => new Promise((resolve, reject) => {
    const holds = new Function('return (' + condition + ')');
    if (holds()) return resolve(true);
    const observer = new MutationObserver(() => { if (holds()) { finish(); resolve(true); } });
    const timer = setTimeout(() => { finish(); reject(new Error('timeout: ' + condition)); }, timeoutMs);
    const finish = () => { observer.disconnect(); clearTimeout(timer); };
    observer.observe(document.documentElement, {subtree: true, childList: true, attributes: true,
                                                characterData: true});
})"""
IDLE = "document.querySelector('[data-testid=\"stApp\"]')?.getAttribute('data-test-script-state') === 'notRunning'"


def rows_are(length):
    return f"({CHART}?._fullData?.[0]?.z?.length === {length})"


COPIES_SHOWN = "(document.querySelector('.al-chart')?.al.picturesShown || 0)"  # ui/frontend/drawing_copies.js


def drawn(length, copies_before):
    """The move's figure is on the screen: Plotly drew it (its rows), or the chart component showed its kept copy (a
    figure seen before is shown at once, and Plotly draws it under the copy when the browser is next idle, up to
    0.5 s later: ui/frontend/after_paint.js). The sweep counts the copy as drawn too (bench/moves.py)."""
    return f"({rows_are(length)} || {COPIES_SHOWN} > {copies_before})"


async def wait_until(page, condition, timeout_ms=60_000):
    await page.evaluate(WAIT_UNTIL, [condition, timeout_ms])


@dataclass(frozen=True)
class Run:
    """What the sessions of one run saw: every move's latency (s), errors, leaks, and Chromium's CPU
    seconds meanwhile (``{"renderer": ..., "all": ...}``)."""
    latencies: list
    errors: int
    leaks: int
    clients: dict


@dataclass(frozen=True)
class Target:
    """The page a session moves: its path for session ``name``, the length it opens at, and whether it
    shows the session's own tokens (then every move checks that no other session's appear)."""
    path: str
    length: int
    own_tokens: bool

    def url(self, base_url: str, name: str) -> str:
        text = "%0A".join(f"{name} {name}x 0" for _ in range(3))  # three lines of this session's own tokens
        return base_url + self.path.format(text=text)


APP = Target("/masks?src={text}&seq_len=6", 6, own_tokens=True)
FLOOR = Target("/?chart=component", 7, own_tokens=False)  # bench/trivial_app.py: one slider, one chart


async def session(browser, base_url, name, seconds, seed, loaded, pause=(0.0, 0.0), target=APP):
    """One user: own text, random slider moves; returns (latencies, errors, leaks).

    `loaded` is a barrier: every session has loaded its page before any starts moving, so
    the figures are about moves, not about eight pages loading at once. After each redraw
    the user looks at the chart for a random time in ``pause`` (seconds) before moving again.
    """
    rng = random.Random(seed)
    context = await browser.new_context(viewport={"width": 1300, "height": 900})
    page = await context.new_page()
    await page.goto(target.url(base_url, name))
    await wait_until(page, f"{rows_are(target.length)} && {IDLE}", 120_000)
    thumb = page.get_by_test_id("stSlider").filter(has_text="Sequence length").get_by_role("slider")
    await loaded.wait()
    length, latencies, errors, leaks = target.length, [], 0, 0
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        step = rng.choice([-1, 1]) if 3 < length < 20 else (1 if length <= 3 else -1)
        length += step
        await thumb.focus()
        copies = await page.evaluate(f"() => {COPIES_SHOWN}")
        started = time.perf_counter()
        await thumb.press("ArrowRight" if step > 0 else "ArrowLeft")
        try:
            await wait_until(page, drawn(length, copies))
        except Exception:
            errors += 1
            break
        latencies.append(time.perf_counter() - started)
        await wait_until(page, IDLE)
        errors += await page.locator(ERRORS).count()
        if target.own_tokens:
            labels = await page.evaluate(LABELS)
            leaks += int(set(re.findall(r"·(s\d+)", labels)) != {name})
        await asyncio.sleep(rng.uniform(*pause))
    await context.close()
    return latencies, errors, leaks


async def run(sessions, seconds, base_url, pause=(0.0, 0.0), target=APP):
    from playwright.async_api import async_playwright

    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        if not lower_priority_of_other_sessions():  # Chromium runs in a session of its own: see there
            print("Could not lower Chromium's autogroup priority: the clients compete with the server.", flush=True)
        loaded = asyncio.Barrier(sessions + 1)  # the sessions, and the clients' CPU meter
        clients, *results = await asyncio.gather(
            clients_cpu(loaded, seconds),
            *(session(browser, base_url, f"s{i}", seconds, i, loaded, pause, target) for i in range(sessions)))
        await browser.close()
    latencies = [value for result in results for value in result[0]]
    return Run(latencies, sum(r[1] for r in results), sum(r[2] for r in results), clients)


async def clients_cpu(loaded, seconds) -> dict[str, float]:
    """Chromium's CPU seconds while the sessions move (from the moment all have loaded, for ``seconds``):
    ``{"renderer": ..., "all": ...}`` (report.chromium_cpu_seconds)."""
    await loaded.wait()
    before = chromium_cpu_seconds()
    await asyncio.sleep(seconds)
    after = chromium_cpu_seconds()  # before the sessions close their pages: a closed renderer's time is gone
    return {kind: after[kind] - before[kind] for kind in before}


def pause_range(text: str) -> tuple[float, float]:
    """``"0.5-1.5"`` → (0.5, 1.5); ``"0"`` → (0.0, 0.0)."""
    low, _, high = text.partition("-")
    return float(low), float(high or low)


def measured_run(proxy, process, sessions, seconds, pause):
    """One run of ``sessions`` clients; returns its figures, the server's included."""
    proxy.take()
    rss_before = process_rss_mb(process.pid)
    cpu_before, busy_before, started = process_cpu_seconds(process.pid), machine_busy_seconds(), time.time()
    stolen_before = stolen_seconds()
    moved = asyncio.run(run(sessions, seconds, proxy.url, pause))
    return dict(latencies=moved.latencies, errors=moved.errors, leaks=moved.leaks, clients=moved.clients,
                server=answer_times(proxy.take()),
                server_cpu=process_cpu_seconds(process.pid) - cpu_before,
                busy=machine_busy_seconds() - busy_before, elapsed=time.time() - started,
                stolen=stolen_seconds() - stolen_before,
                rss=(rss_before, process_rss_mb(process.pid)))


def per_move_ms(seconds: float, moves) -> str:
    return f"{seconds / max(1, len(moves)) * 1e3:.0f}"


def clients_per_move(clients: dict, moves) -> str:
    """Chromium's CPU per move (ms): its renderers / all its processes."""
    return f"{per_move_ms(clients['renderer'], moves)} / {per_move_ms(clients['all'], moves)}"


def table_rows(runs, floor=None) -> list[tuple[str, ...]]:
    """The table's rows; ``floor``: the trivial page's `Run` with 1 and with N sessions, if it ran."""
    single = runs[0]

    def each(format_run):
        return tuple(format_run(result) for result in runs)

    def ms(values, q):
        return f"{percentile(values, q) * 1e3:.0f}"

    def ratio(result, key):
        return f"{percentile(result[key], 90) / percentile(single[key], 90):.2f}"

    return [
        ("sessions", *each(lambda r: str(r["sessions"])), ""),
        ("pause after each redraw (s)", *each(lambda r: "{:g}–{:g}".format(*r["pause"])),
         "a user looks at the chart before the next move; the last column never waits"),
        ("moves", *each(lambda r: str(len(r["latencies"]))), ""),
        ("p50 slider → redrawn chart (ms)", *each(lambda r: ms(r["latencies"], 50)), ""),
        ("p90 slider → redrawn chart (ms)", *each(lambda r: ms(r["latencies"], 90)),
         "ratio to 1 session: " + " / ".join(ratio(r, "latencies") for r in runs[1:]) + " (target ≤ 2, paced)"),
        ("p50 / p90 server answer on the wire: rerun request → its run's script_finished (ms)",
         *each(lambda r: f"{ms(r['server'], 50)} / {ms(r['server'], 90)}"),
         "p90 ratio " + " / ".join(ratio(r, "server") for r in runs[1:])),
        ("errors / exceptions", *each(lambda r: str(r["errors"])), "target 0"),
        ("moves that showed another session's tokens", *each(lambda r: str(r["leaks"])), "target 0"),
        ("server RSS (MB), start → end of the run", *each(lambda r: "{:.0f} → {:.0f}".format(*r["rss"])), ""),
        ("CPU busy: whole machine / the Streamlit server's share of it",
         *each(lambda r: f"{r['busy'] / r['elapsed'] / os.cpu_count():.0%} / {r['server_cpu'] / r['busy']:.0%}"),
         f"{os.cpu_count()} cores; the rest is the Chromium clients"),
        ("cores' time the host took (steal)", *each(lambda r: f"{steal_share(r['stolen'], r['elapsed']):.0%}"),
         "a shared host: part of the CPU busy above was not this machine's to use"),
        ("server CPU per move (ms)", *each(lambda r: per_move_ms(r["server_cpu"], r["latencies"])), ""),
        ("Chromium's CPU per move (ms): its renderers / all its processes",
         *each(lambda r: clients_per_move(r["clients"], r["latencies"])),
         "what drawing one move costs the clients, which share the cores with the server"),
    ] + ([] if floor is None else [
        ("framework floor: p90 on the trivial one-chart page, paced (ms)",
         *(ms(each_floor.latencies, 90) for each_floor in floor), *[""] * (len(runs) - 2),
         f"ratio {percentile(floor[1].latencies, 90) / percentile(floor[0].latencies, 90):.2f}: what "
         f"{runs[1]['sessions']} Chromium clients on this machine leave any Streamlit page (one slider, one chart)"),
        ("framework floor: Chromium's CPU per move (ms), renderers / all",
         *(clients_per_move(each_floor.clients, each_floor.latencies) for each_floor in floor),
         *[""] * (len(runs) - 2), "the same page's cost to the clients"),
    ])


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sessions", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--single-seconds", type=float, default=60)  # ~50 moves: a steadier p90
    parser.add_argument("--pause", type=pause_range, default=(0.5, 1.5),
                        help="seconds a user looks at the chart between moves, LOW-HIGH (default 0.5-1.5)")
    parser.add_argument("--stress-seconds", type=float, default=30,
                        help="then N sessions with no pause at all, for this long (0: skip)")
    parser.add_argument("--floor", action=argparse.BooleanOptionalAction, default=True,
                        help="also run the paced runs on the trivial one-chart page (default: yes)")
    parser.add_argument("--write", action="store_true", help="write the table into BENCHMARKS.md")
    args = parser.parse_args()
    plan = [(1, args.single_seconds, args.pause), (args.sessions, args.seconds, args.pause)]
    if args.stress_seconds:
        plan.append((args.sessions, args.stress_seconds, (0.0, 0.0)))
    with streamlit_server(with_process=True) as (server_url, process), \
            WireProxy(int(server_url.rsplit(":", 1)[1])) as proxy, \
            (streamlit_server("bench/trivial_app.py") if args.floor else contextlib.nullcontext()) as floor_url:
        # The clients share this machine's cores with the server they test. At nice 19 (inherited by
        # Playwright; Chromium's own session group is lowered in run()) they get whatever CPU the server
        # leaves, as if each user had a computer of their own; the server keeps its normal priority.
        os.nice(19)
        asyncio.run(run(1, 3, proxy.url))  # warm-up, not reported: TensorFlow loads, the first model is built
        if args.floor:
            asyncio.run(run(1, 3, floor_url, target=FLOOR))
        runs, floor = [], []
        for sessions, seconds, pause in plan:
            runs.append(dict(measured_run(proxy, process, sessions, seconds, pause), sessions=sessions, pause=pause))
            if args.floor and len(floor) < 2:  # each paced run of the app, then the same on the floor
                floor.append(asyncio.run(run(sessions, seconds, floor_url, pause, FLOOR)))
    header = "| measure | 1 session | N sessions | " + ("N sessions, no pause | " if len(runs) > 2 else "") + "note |"
    table = [header, "|" + " --- |" * (len(runs) + 2)]
    table += ["| " + " | ".join(cells) + " |" for cells in table_rows(runs, floor or None)]  # None: --no-floor
    print("\n".join(table))
    if args.write:
        write_section("Load test", f"1 session × {args.single_seconds:.0f} s (the reference), then {args.sessions} "
                      f"sessions × {args.seconds:.0f} s" + (f", then {args.sessions} sessions × "
                                                           f"{args.stress_seconds:.0f} s without pauses" if
                                                           args.stress_seconds else "") + "; one server, same run."
                      + (" After each paced run, the same run on the benchmark's trivial one-chart page "
                         "(the framework floor, a server of its own)." if args.floor else ""),
                      table)
    if any(result["errors"] or result["leaks"] for result in runs) or any(each_floor.errors for each_floor in floor):
        sys.exit(1)


if __name__ == "__main__":
    main()
