"""Shared by the benchmarks: the rows a run prints, percentiles, process memory, and the BENCHMARKS.md
sections."""

from __future__ import annotations

import datetime
import os
import platform
import re
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = ROOT / "BENCHMARKS.md"

ROWS = []  # (section, measure, figure, target) of every row printed this run: what --write puts in the table


def row(section, measure, value, target=""):
    ROWS.append((section, measure, value, target))
    print(f"{section:<10} {measure:<58} {value:<24} {target}", flush=True)


def percentile(values, q) -> float:
    return float(np.percentile(values, q)) if len(values) else float("nan")


def process_rss_mb(pid: int | None = None) -> float:
    """Resident memory of a process (this one by default), from /proc."""
    status = Path(f"/proc/{pid or os.getpid()}/status").read_text()
    return int(re.search(r"VmRSS:\s+(\d+) kB", status).group(1)) / 1024


def _stat_fields(pid: int) -> list[str]:
    """The fields of /proc/<pid>/stat after the command name (field 3, the state, comes first)."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def process_cpu_seconds(pid: int) -> float:
    """User + system CPU time a process has used, from /proc/<pid>/stat."""
    fields = _stat_fields(pid)
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def machine_busy_seconds() -> float:
    """CPU time every core has spent running this machine's work since boot, from /proc/stat (not idle,
    and not stolen by the host: see `stolen_seconds`)."""
    user, nice, system, idle, iowait, irq, softirq = map(int, Path("/proc/stat").read_text().split()[1:8])
    return (user + nice + system + irq + softirq) / os.sysconf("SC_CLK_TCK")


def stolen_seconds() -> float:
    """CPU time since boot that this virtual machine's cores wanted but the host gave to others
    ("steal" in /proc/stat): on a shared host, the part of a slow run that is not this code's."""
    return int(Path("/proc/stat").read_text().split()[8]) / os.sysconf("SC_CLK_TCK")


def steal_share(stolen: float, elapsed: float) -> float:
    """The share of the cores' time the host took (``stolen`` seconds) during ``elapsed`` seconds."""
    return stolen / (elapsed * (os.cpu_count() or 1))


def steal_note(stolen: float, elapsed: float) -> str:
    """`steal_share` as one sentence for a benchmark's table."""
    return (f"During this run the host took {steal_share(stolen, elapsed):.0%} of the cores' time (\"steal\"); "
            "a busy host makes every figure slower and the same code measures differently from run to run.")


def _parent(pid: int) -> int:
    return int(_stat_fields(pid)[1])


def descendants(root: int) -> list[int]:
    """Every live process below ``root`` in the process tree, from /proc."""
    parents = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parents[int(entry.name)] = _parent(int(entry.name))
            except (OSError, ValueError, IndexError):  # the process ended while we read
                pass
    found, frontier = [], [root]
    while frontier:
        children = [pid for pid, parent in parents.items() if parent in frontier]
        found += children
        frontier = children
    return found


def chromium_cpu_seconds(root: int | None = None) -> dict[str, float]:
    """CPU time (user + system) used so far by the live Chromium processes below ``root`` (this process by
    default): ``{"renderer": its page renderers', "all": every Chromium process's}``.

    A Chromium process is one whose program (``/usr/lib/chromium/chromium``) is named so. Chromium rewrites
    its children's command lines into one string, arguments separated by spaces, not NULs: both are read.
    """
    used = {"renderer": 0.0, "all": 0.0}
    for pid in descendants(root or os.getpid()):
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            seconds = process_cpu_seconds(pid)
        except (OSError, ValueError, IndexError):  # the process ended while we read
            continue
        arguments = command.split()
        if arguments and "chrom" in Path(arguments[0]).name:
            used["all"] += seconds
            if "--type=renderer" in arguments:
                used["renderer"] += seconds
    return used


def lower_priority_of_other_sessions(root: int | None = None, nice: int = 19) -> int:
    """Put every process below ``root`` that runs in a session of its own at ``nice``; returns how many groups.

    Linux's autogroup scheduling shares the CPU between *sessions* first: a process started
    with setsid (Playwright starts Chromium that way) competes at nice 0 as a group with
    everything else, whatever its own nice value. Writing the group's nice value to
    /proc/<pid>/autogroup is what makes such a group yield. Without it the eight browsers of
    the load test kept the server waiting in the run queue ~1.5 s for every second it ran.
    """
    mine = autogroup("self")
    changed = set()
    for pid in descendants(root or os.getpid()):
        try:
            group = autogroup(pid)
            if group and group != mine and group not in changed:
                Path(f"/proc/{pid}/autogroup").write_text(str(nice))
                changed.add(group)
        except OSError:  # no autogroup support, or the process ended
            pass
    return len(changed)


def autogroup(pid: int | str) -> str:
    """The name of a process's autogroup (``/autogroup-7``), or "" when it has none of its own.

    The kernel prints nothing for a process in the default group (one whose session was never
    made with setsid since boot, as under some CI runners), and the file is missing where the
    kernel has no autogroup scheduling.
    """
    path = Path(f"/proc/{pid}/autogroup")
    text = path.read_text() if path.exists() else ""
    return text.split()[0] if text.strip() else ""


def _cpu_model() -> str:
    """`` (AMD EPYC; oneDNN on)``: the CPU's model name and whether TensorFlow runs its oneDNN kernels (it turns them
    on by itself for some x86 CPUs; the same code then measures differently, its CPU allocator a pool too)."""
    found = re.search(r"^model name\s*:\s*(.+)$", Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists()
                      else "", re.MULTILINE)
    try:
        from tensorflow.python.util import _pywrap_util_port  # noqa: PLC0415  (TensorFlow's own check; no public one)

        onednn = f"oneDNN {'on' if _pywrap_util_port.IsMklEnabled() else 'off'}"
    except (ImportError, AttributeError):
        onednn = "oneDNN unknown"
    return f" ({found.group(1).strip() + '; ' if found else ''}{onednn})"


def machine() -> str:
    import tensorflow as tf  # noqa: PLC0415  (only the benchmarks need the version)

    gpus = tf.config.list_physical_devices("GPU")
    return (f"{platform.processor() or platform.machine()}{_cpu_model()}, {os.cpu_count()} cores, "
            f"{'GPU: ' + str(len(gpus)) if gpus else 'no GPU'}; Python {platform.python_version()}, "
            f"TensorFlow {tf.__version__}; {datetime.date.today().isoformat()}")


def write_section(title: str, intro: str, table: list[str]) -> None:
    """Replace (or add) the ``## title`` section of BENCHMARKS.md."""
    empty = "# Benchmarks\n\nMade by the project's own `make` targets.\n"
    text = BENCHMARKS.read_text() if BENCHMARKS.exists() else empty
    body = f"## {title}\n\n{machine()}\n\n{intro}\n\n" + "\n".join(table) + "\n"
    pattern = re.compile(rf"^## {re.escape(title)}\n.*?(?=^## |\Z)", re.MULTILINE | re.DOTALL)
    text = pattern.sub(body + "\n", text) if pattern.search(text) else text.rstrip() + "\n\n" + body
    BENCHMARKS.write_text(text)


def timed(*fns, repeats):
    """Median seconds of each of ``fns``, timed in turns (one call of each per round, the order
    rotating), so that a burst of load on a noisy machine falls on all of them, not on one."""
    for fn in fns:
        fn()
        fn()
    times = [[] for _ in fns]
    for round_ in range(repeats):
        for index in np.roll(np.arange(len(fns)), round_):
            started = time.perf_counter()
            fns[index]()
            times[index].append(time.perf_counter() - started)
    return [float(np.median(each)) for each in times]
