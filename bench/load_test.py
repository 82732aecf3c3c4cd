"""Load test: concurrent headless-Chromium sessions moving sliders against one `streamlit run`.

    python bench/load_test.py [--sessions 8] [--seconds 60] [--single-seconds 30] [--write]

First one session alone (the reference), then N sessions at once, all on loopback; the
clients run at nice 19 so that they do not starve the server they measure.
Each session types its own source text and checks, after every move, that its
chart shows its own tokens only (sessions never see each other's state). A move
is a key press on the sequence-length slider; its latency runs until the chart
shows the new length. Prints a table; --write puts it into BENCHMARKS.md.
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
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]
sys.path.insert(0, str(ROOT / "bench"))

from browser_support import CHROMIUM, CHROMIUM_ARGS, streamlit_server  # noqa: E402
from wire_proxy import WireProxy, answer_times  # noqa: E402
from report import machine_busy_seconds, percentile, process_cpu_seconds, process_rss_mb, write_section  # noqa: E402

from chart_support import FIRST_PLOT as CHART  # noqa: E402
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


async def wait_until(page, condition, timeout_ms=60_000):
    await page.evaluate(WAIT_UNTIL, [condition, timeout_ms])


async def session(browser, base_url, name, seconds, seed, loaded):
    """One user: own text, random slider moves; returns (latencies, errors, leaks).

    `loaded` is a barrier: every session has loaded its page before any starts moving, so
    the figures are about moves, not about eight pages loading at once.
    """
    rng = random.Random(seed)
    context = await browser.new_context(viewport={"width": 1300, "height": 900})
    page = await context.new_page()
    text = "\n".join(f"{name} {name}x 0" for _ in range(3))
    await page.goto(f"{base_url}/masks?src={text.replace(chr(10), '%0A')}&seq_len=6")
    await wait_until(page, f"{rows_are(6)} && {IDLE}", 120_000)
    thumb = page.get_by_test_id("stSlider").filter(has_text="Sequence length").get_by_role("slider")
    await loaded.wait()
    length, latencies, errors, leaks = 6, [], 0, 0
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        step = rng.choice([-1, 1]) if 3 < length < 20 else (1 if length <= 3 else -1)
        length += step
        await thumb.focus()
        started = time.perf_counter()
        await thumb.press("ArrowRight" if step > 0 else "ArrowLeft")
        try:
            await wait_until(page, rows_are(length))
        except Exception:
            errors += 1
            break
        latencies.append(time.perf_counter() - started)
        await wait_until(page, IDLE)
        errors += await page.locator(ERRORS).count()
        labels = await page.evaluate(LABELS)
        leaks += int(set(re.findall(r"·(s\d+)", labels)) != {name})
    await context.close()
    return latencies, errors, leaks


async def run(sessions, seconds, base_url):
    from playwright.async_api import async_playwright

    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        loaded = asyncio.Barrier(sessions)
        results = await asyncio.gather(*(session(browser, base_url, f"s{i}", seconds, i, loaded)
                                         for i in range(sessions)))
        await browser.close()
    latencies = [value for result in results for value in result[0]]
    return latencies, sum(r[1] for r in results), sum(r[2] for r in results)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sessions", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--single-seconds", type=float, default=30)
    parser.add_argument("--write", action="store_true", help="write the table into BENCHMARKS.md")
    args = parser.parse_args()
    with streamlit_server(with_process=True) as (server_url, process), \
            WireProxy(int(server_url.rsplit(":", 1)[1])) as proxy:
        base_url = proxy.url
        # The clients share this machine's cores with the server they test. At nice 19 (inherited by
        # Playwright and every Chromium process) they get whatever CPU the server leaves, as if each
        # user had a computer of their own; the server keeps its normal priority.
        os.nice(19)
        proxy.take()
        single, single_errors, single_leaks = asyncio.run(run(1, args.single_seconds, base_url))
        single_server = answer_times(proxy.take())
        rss_before = process_rss_mb(process.pid)
        cpu_before, busy_before, started = process_cpu_seconds(process.pid), machine_busy_seconds(), time.time()
        many, errors, leaks = asyncio.run(run(args.sessions, args.seconds, base_url))
        many_server = answer_times(proxy.take())
        server_cpu = process_cpu_seconds(process.pid) - cpu_before
        machine_busy, elapsed = machine_busy_seconds() - busy_before, time.time() - started
        rss_after = process_rss_mb(process.pid)
    p90_single, p90_many = percentile(single, 90), percentile(many, 90)
    server_single, server_many = percentile(single_server, 90), percentile(many_server, 90)
    rows = [
        ("sessions", "1", str(args.sessions), ""),
        ("moves", str(len(single)), str(len(many)), ""),
        ("p50 slider → redrawn chart (ms)", f"{percentile(single, 50) * 1e3:.0f}",
         f"{percentile(many, 50) * 1e3:.0f}", ""),
        ("p90 slider → redrawn chart (ms)", f"{p90_single * 1e3:.0f}", f"{p90_many * 1e3:.0f}",
         f"ratio {p90_many / p90_single:.2f} (target ≤ 2)"),
        ("p50 / p90 server answer on the wire: rerun request → its last byte (ms)",
         f"{percentile(single_server, 50) * 1e3:.0f} / {server_single * 1e3:.0f}",
         f"{percentile(many_server, 50) * 1e3:.0f} / {server_many * 1e3:.0f}",
         f"p90 ratio {server_many / server_single:.2f}; {len(single_server)} / {len(many_server)} answers seen"),
        ("errors / exceptions", str(single_errors), str(errors), "target 0"),
        ("moves that showed another session's tokens", str(single_leaks), str(leaks), "target 0"),
        ("server RSS (MB), before → after", "", f"{rss_before:.0f} → {rss_after:.0f}", ""),
        ("CPU busy during the N-session run: whole machine / the Streamlit server", "",
         f"{machine_busy / elapsed / os.cpu_count():.0%} / {server_cpu / machine_busy:.0%} of it",
         f"{os.cpu_count()} cores; the rest is the {args.sessions} Chromium clients"),
        ("server CPU per move (ms)", "", f"{server_cpu / max(1, len(many)) * 1e3:.0f}", ""),
    ]
    table = ["| measure | 1 session | N sessions | note |", "| --- | --- | --- | --- |"]
    table += [f"| {a} | {b} | {c} | {d} |" for a, b, c, d in rows]
    print("\n".join(table))
    if args.write:
        write_section("Load test", f"{args.sessions} sessions × {args.seconds:.0f} s, "
                      f"reference: 1 session × {args.single_seconds:.0f} s, same run.", table)
    if errors or leaks:
        sys.exit(1)


if __name__ == "__main__":
    main()
