"""Architecture churn: concurrent Chromium sessions moving random sidebar sliders on the Attention page.

    python bench/architecture_churn.py [--sessions 8] [--seconds 45] [--rounds 3] [--write]

Where `make load-test` moves the sequence length only, each session here moves a random one of the
sequence length, layers, heads, d_model and d_ff sliders, one key press at a time, and looks for a
random 0.5–1.5 s after each run: new architectures are built, traced and evicted from the 4-model
cache all the time. First one session alone on the same walk (the reference, as in load_test.py),
then the rounds: every round starts new sessions on the same random walks. Prints, per round,
moves, p50 / p90 of key press → the run's end and the p90's ratio to the reference, errors, moves
that showed another session's tokens, and the server's RSS before and after: the figure to watch is
whether RSS stops growing after the first round (before the kernel release in
transformer.live.model_cache.ModelCache it grew ~500 MB a round).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "support"), str(ROOT / "bench")]

from browser_support import CHROMIUM, CHROMIUM_ARGS, streamlit_server  # noqa: E402
from load_test import ERRORS, IDLE, Target, wait_until  # noqa: E402
from report import lower_priority_of_other_sessions, percentile, process_rss_mb, write_section  # noqa: E402

PAGE = Target("/attention?src={text}&tgt={text}", 7, own_tokens=True)  # three lines of the session's own tokens
SLIDERS = ("Sequence length", "Layers (N)", "Heads (h)", "d_model", "d_ff")
# Every drawn chart's query labels: a session's own tokens are "s3", "s3x" …
LABELS = ("() => [...document.querySelectorAll('.al-chart')].map((node) => (node._fullData || [])"
          ".map((trace) => (trace.y || []).join(' ')).join(' ')).join(' ')")


async def session(browser, base_url: str, name: str, seconds: float, seed: int, loaded) -> tuple[list, int, int]:
    """One user on the Attention page with their own tokens; returns (latencies, errors, leaks)."""
    rng = random.Random(seed)
    context = await browser.new_context(viewport={"width": 1300, "height": 900})
    page = await context.new_page()
    await page.goto(PAGE.url(base_url, name))
    await wait_until(page, f"{IDLE} && !!document.querySelector('.al-chart')?._fullData", 120_000)
    await loaded.wait()
    latencies, errors, leaks = [], 0, 0
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        thumb = page.get_by_test_id("stSlider").filter(has_text=rng.choice(SLIDERS)).get_by_role("slider")
        before = await page.evaluate("() => location.search")
        await thumb.focus()
        started = time.perf_counter()
        await thumb.press(rng.choice(["ArrowRight", "ArrowLeft"]))
        try:  # the app writes the new value into the address as its run starts
            await wait_until(page, f"location.search !== {before!r}", 10_000)
        except Exception:
            continue  # at an end of its range: nothing moved
        try:
            await wait_until(page, IDLE, 120_000)
        except Exception:
            errors += 1
            break
        latencies.append(time.perf_counter() - started)
        errors += await page.locator(ERRORS).count()
        leaks += int(bool(set(re.findall(r"·(s\d+)", await page.evaluate(LABELS))) - {name}))
        await asyncio.sleep(rng.uniform(0.5, 1.5))
    await context.close()
    return latencies, errors, leaks


async def round_of(sessions: int, seconds: float, base_url: str) -> tuple[list, int, int]:
    from playwright.async_api import async_playwright

    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        lower_priority_of_other_sessions()
        loaded = asyncio.Barrier(sessions)
        results = await asyncio.gather(*(session(browser, base_url, f"s{i}", seconds, i, loaded)
                                         for i in range(sessions)))
        await browser.close()
    return ([value for result in results for value in result[0]], sum(r[1] for r in results),
            sum(r[2] for r in results))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sessions", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=45)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--write", action="store_true", help="write the table into BENCHMARKS.md")
    args = parser.parse_args()
    table = ["| round | sessions | moves | p50 / p90 (ms) | p90 ÷ 1 session's | errors | leaks | server RSS (MB) |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    print("\n".join(table))
    failed, reference = False, None
    with streamlit_server(with_process=True) as (base_url, process):
        os.nice(19)  # the clients yield to the server they measure (see load_test.py)
        for number in range(args.rounds + 1):
            sessions = 1 if number == 0 else args.sessions  # round 0: one session alone, the reference
            rss_before = process_rss_mb(process.pid)
            latencies, errors, leaks = asyncio.run(round_of(sessions, args.seconds, base_url))
            p90 = percentile(latencies, 90) if latencies else None
            reference = p90 if number == 0 else reference
            times = f"{percentile(latencies, 50) * 1e3:.0f} / {p90 * 1e3:.0f}" if latencies else "–"
            ratio = f"{p90 / reference:.2f}" if number and p90 and reference else "–"
            table.append(f"| {number or 'reference'} | {sessions} | {len(latencies)} | {times} | {ratio} | {errors} | "
                         f"{leaks} | {rss_before:.0f} → {process_rss_mb(process.pid):.0f} |")
            print(table[-1], flush=True)
            failed = failed or bool(errors or leaks)
    if args.write:
        write_section("Architecture churn", f"{args.sessions} sessions × {args.rounds} rounds × {args.seconds:.0f} s "
                      "moving a random one of the sequence length, layers, heads, d_model and d_ff sliders on the "
                      "Attention page (`make churn-test`), after one session alone on the same walk (the reference): "
                      "each round starts new sessions on the same random walks, so the server's memory should stop "
                      "growing after the first. Latency: key press → the end of the run (a new architecture is built "
                      "and run eagerly).", table)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
