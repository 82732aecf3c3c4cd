"""The load test's wire proxy: it must recognise rerun requests and finished runs among the WebSocket frames."""

import os
import sys
from pathlib import Path

import pytest
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from wire_proxy import _Messages, answer_times


def client_frame(message: BackMsg) -> bytes:
    """A masked binary WebSocket frame, as a browser sends it."""
    payload, key = message.SerializeToString(), os.urandom(4)
    masked = bytes(byte ^ key[i % 4] for i, byte in enumerate(payload))
    length = len(payload)
    size = bytes([0x80 | length]) if length < 126 else bytes([0x80 | 126]) + length.to_bytes(2, "big")
    header = bytes([0x82]) + size
    return header + key + masked


def test_frames_split_across_reads_are_named_by_their_backmsg_type():
    rerun = BackMsg()
    rerun.rerun_script.query_string = "seq_len=" + "8" * 300  # a frame longer than 125 bytes
    heartbeat = BackMsg()
    heartbeat.app_heartbeat = True
    upgrade = b"GET /_stcore/stream HTTP/1.1\r\nUpgrade: websocket\r\n\r\n"
    stream = upgrade + client_frame(rerun) + client_frame(heartbeat)
    reader = _Messages("up")
    names = reader.feed(stream[:70]) + reader.feed(stream[70:200]) + reader.feed(stream[200:])
    assert names == ["rerun_script", "app_heartbeat"]


def server_frame(payload: bytes, opcode: int = 2) -> bytes:
    """An unmasked WebSocket frame, as the server sends it."""
    length = len(payload)
    header = bytes([0x80 | opcode]) + (bytes([length]) if length < 126 else bytes([126]) + length.to_bytes(2, "big"))
    return header + payload


def test_server_frames_are_named_by_their_forwardmsg_and_a_stopped_run_is_not_a_finished_one():
    finished, stopped = ForwardMsg(), ForwardMsg()
    finished.script_finished = ForwardMsg.FINISHED_SUCCESSFULLY
    stopped.script_finished = ForwardMsg.FINISHED_EARLY_FOR_RERUN
    stream = (b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n" + server_frame(b"\x00\x01", opcode=9)
              + server_frame(stopped.SerializeToString()) + server_frame(finished.SerializeToString()))
    reader = _Messages("down")
    assert reader.feed(stream[:50]) + reader.feed(stream[50:]) == ["opcode 9", "script_stopped_for_rerun",
                                                                   "script_finished"]
    plain = _Messages("down")  # a static file: never read as frames, however its body looks
    assert plain.feed(b"HTTP/1.1 200 OK\r\n\r\n" + server_frame(finished.SerializeToString()) * 3) == []
    assert plain.feed(b"\r\n\r\n" + server_frame(finished.SerializeToString())) == []


def test_answer_times_run_from_a_rerun_request_to_the_run_that_finished():
    events = [  # (connection, time, message); each connection starts with its page load (seconds)
        (1, -5.0, "rerun_script"), (1, -2.0, "script_finished"),
        (1, 0.0, "rerun_script"), (1, 0.01, "app_heartbeat"), (1, 0.05, "delta"),
        (1, 0.08, "script_finished"), (1, 0.5, "opcode 9"),  # a ping between moves ends nothing
        (1, 1.0, "rerun_script"), (1, 1.02, "rerun_script"),  # the second stops the first run
        (1, 1.05, "script_stopped_for_rerun"), (1, 1.2, "script_finished"),
        (2, -4.0, "rerun_script"), (2, -1.0, "script_finished"),
        (2, 0.5, "rerun_script"), (2, 0.6, "delta"),  # never finished: not timed
    ]
    assert [round(t, 3) for t in answer_times(events)] == [0.08, 0.2]


def test_a_child_in_a_session_of_its_own_is_lowered_as_a_group(monkeypatch):
    """Playwright starts Chromium with setsid: its autogroup, not its nice value, decides its CPU share."""
    import subprocess
    import time

    import pytest
    import report
    from load_test import pause_range

    assert pause_range("0.5-1.5") == (0.5, 1.5) and pause_range("0") == (0.0, 0.0)
    if not Path("/proc/self/autogroup").exists():
        pytest.skip("this kernel has no autogroup scheduling")
    parent = subprocess.Popen([sys.executable, "-c", "import subprocess, time; "
                               "subprocess.Popen(['sleep', '30'], start_new_session=True); time.sleep(30)"])
    try:
        for _ in range(100):  # until the grandchild exists and leads its own session (setsid runs after the fork)
            below = report.descendants(parent.pid)
            if below and os.getsid(below[0]) == below[0]:
                break
            time.sleep(0.05)
        assert below and Path(f"/proc/{below[0]}/autogroup").read_text().split()[-1] == "0"
        assert report.lower_priority_of_other_sessions(parent.pid) == 1
        assert Path(f"/proc/{below[0]}/autogroup").read_text().split()[-1] == "19"
        # A runner in the kernel's default group reads an empty /proc/self/autogroup (CI did): still one group.
        own_group_of = report.autogroup
        monkeypatch.setattr(report, "autogroup", lambda pid: "" if pid == "self" else own_group_of(pid))
        assert report.lower_priority_of_other_sessions(parent.pid) == 1
    finally:
        for pid in report.descendants(parent.pid):
            os.kill(pid, 9)
        parent.kill()
        parent.wait()


def test_the_engine_preload_runs_once_and_app_waits_for_it(monkeypatch):
    """`make run` (serve.py) imports TensorFlow in one background thread; app.py waits for it, never races it."""
    import threading
    import types

    from ui import preload

    assert preload.wait(timeout=0)  # nothing started (AppTest, streamlit run app.py): no wait at all
    started = []

    class Recorded:  # stands in for threading.Thread inside `preload` only: patching threading.Thread.start
        def __init__(self, target, name, daemon):  # itself would also stop any Timer another thread
            self.name = name  # (the engine's idle tracer) starts meanwhile, for the rest of the session

        def start(self):
            started.append(self.name)

    monkeypatch.setattr(preload, "_started", threading.Event())
    monkeypatch.setattr(preload, "_done", threading.Event())
    monkeypatch.setattr(preload, "threading", types.SimpleNamespace(Thread=Recorded))
    preload.start()
    preload.start()
    assert started == ["preload-engine"]  # once
    assert not preload.wait(timeout=0.05)  # the app waits while the import runs
    preload._import_engine()
    assert preload.wait(timeout=0) and "transformer" in sys.modules


def test_the_hosts_share_of_a_run_is_read_from_proc_stat(monkeypatch):
    """A shared host's "steal": the benchmarks print it beside their figures, so a slow run can be told apart."""
    import report

    fields = Path("/proc/stat").read_text().split()
    assert fields[0] == "cpu" and report.stolen_seconds() >= int(fields[8]) / os.sysconf("SC_CLK_TCK")
    monkeypatch.setattr(report.os, "cpu_count", lambda: 2)
    assert "the host took 10% of the cores' time" in report.steal_note(stolen=2.0, elapsed=10.0)


def test_the_slider_benchmark_interleaves_every_page_and_keeps_its_move_counts():
    """Each page takes a turn in each of the rounds: a default page moves one control a round (28 moves of 4
    kinds), a floor or N=512 page makes all its 30 moves across the rounds, and the floors come first. Every pad
    move of a lane is a new set of pads (a new computation)."""
    from moves import pad_set
    from slider_bench import ROUNDS, _lanes, _round_moves

    lanes = _lanes("http://floor", "http://app", 30)
    assert [lane.url for lane in lanes[:2]] == ["http://floor/?chart=plotly_chart", "http://floor/?chart=component"]
    for lane in lanes:
        plan = [_round_moves(lane, 30, index) for index in range(ROUNDS)]
        if "default" in lane.measure:
            assert plan == [("seq_len", 7), ("heads", 7), ("d_model", 7), ("pads", 7)] and lane.look_first
            assert "(28 moves" in lane.measure
        elif "head view" in lane.measure:  # a token focus and a head toggle, in turns
            assert plan == [("focus", 7), ("head_toggle", 7)] * 2 and "(28 moves" in lane.measure
        else:  # the floors move their slider; at N = 512 the pads move (the slider's stops are 32 apart there)
            kind = "pads" if "N=512" in lane.measure or "N=4096" in lane.measure else "seq_len"
            assert [each for each, _ in plan] == [kind] * ROUNDS and sum(moves for _, moves in plan) == 30
    assert sum("N=512" in lane.measure for lane in lanes) == 3 and len(lanes) == 9  # … and rollout at N = 512
    assert "N=4096" in lanes[-1].measure and lanes[-1].target == "p50 ≤ 1.5 s"
    assert len({pad_set(index) for index in range(30)} | {"0 <pad>"}) == 31  # never the default, never twice


def test_the_load_test_moves_the_app_with_own_tokens_and_reports_the_floor_beside_it():
    """Each app session opens the Masks page with text of its own (the leak check reads it back); the floor
    is the benchmark's trivial page; its paced p90s and their ratio sit in a row of their own."""
    from load_test import APP, FLOOR, Run, table_rows

    url = APP.url("http://host", "s3")
    assert url.startswith("http://host/masks?") and url.count("s3 s3x 0") == 3 and "seq_len=6" in url
    assert APP.own_tokens and not FLOOR.own_tokens
    assert FLOOR.url("http://host", "s3") == "http://host/?chart=component"
    run = dict(sessions=1, pause=(0.5, 1.5), latencies=[0.2] * 10, server=[0.05] * 10, errors=0, leaks=0,
               rss=(600, 601), busy=10.0, elapsed=10.0, stolen=0.0, server_cpu=1.0,
               clients={"renderer": 2.0, "all": 2.5})
    runs = [run, dict(run, sessions=8, latencies=[0.5] * 10)]
    floor = [Run([0.1] * 10, 0, 0, {"renderer": 0.8, "all": 1.0}),
             Run([0.3] * 10, 0, 0, {"renderer": 0.9, "all": 1.2})]
    rows = {row[0]: row[1:] for row in table_rows(runs, floor)}
    assert rows["Chromium's CPU per move (ms): its renderers / all its processes"][:2] == ("200 / 250", "200 / 250")
    floor_row = rows["framework floor: p90 on the trivial one-chart page, paced (ms)"]
    assert floor_row[:2] == ("100", "300") and floor_row[2].startswith("ratio 3.00: what 8 Chromium clients")
    assert rows["framework floor: Chromium's CPU per move (ms), renderers / all"][:2] == ("80 / 100", "90 / 120")
    assert len(table_rows(runs)) == len(rows) - 2  # --no-floor: no floor rows


def test_chromiums_cpu_is_summed_over_its_processes_below_a_root_and_renderers_apart():
    """The load test's per-move client cost: Chromium's processes only (named so in their command line), the
    renderers (``--type=renderer``) also on their own; any other process below the root is left out."""
    import subprocess
    import time

    import report

    burn = "import time, sys\nend = time.process_time() + 0.3\nwhile time.process_time() < end: pass\ntime.sleep(30)"
    children = [["/usr/lib/chromium/chromium --type=renderer --lang=en", "-c", burn],  # as Chromium rewrites it
                ["/usr/lib/chromium/chromium", "-c", burn, "--type=gpu-process"],  # as started
                ["python3", "-c", burn]]  # not Chromium: not counted
    parent = subprocess.Popen([sys.executable, "-c", "import subprocess, sys; children = [subprocess.Popen(c, "
                               f"executable=sys.executable) for c in {children!r}]; [c.wait() for c in children]"])
    try:
        tick = 1 / os.sysconf("SC_CLK_TCK")  # /proc counts CPU time in clock ticks: one may be missing per process
        for _ in range(400):  # until all three have burnt their 0.3 s
            below = report.descendants(parent.pid)
            if len(below) == 3 and all(report.process_cpu_seconds(pid) >= 0.3 - tick for pid in below):
                break
            time.sleep(0.05)
        used = report.chromium_cpu_seconds(parent.pid)
        assert 0.3 - tick <= used["renderer"] <= 0.45  # it failed once at 0.29 without the tick's tolerance
        assert 0.6 - 2 * tick <= used["all"] <= 0.85  # 0.9 and more with the third
    finally:
        for pid in report.descendants(parent.pid):
            os.kill(pid, 9)
        parent.kill()
        parent.wait()


@pytest.mark.slow
def test_the_memory_part_moves_the_sequence_length_through_the_sliders_stops():
    """The part drives the app through AppTest (it once called a widget the sidebar no longer has, and make bench
    stopped there): a short run of it reruns the Attention page without an exception and reports one row."""
    import system_bench
    from report import ROWS

    before = len(ROWS)
    system_bench.memory(True, warm_up=1, reruns=2)
    (section, measure, value, target), = ROWS[before:]
    assert section == "memory" and "after 1 warm-up reruns → after 2 more" in measure and value.endswith("%)")


def test_a_student_counts_another_students_tokens_in_a_chart_as_a_leak_and_a_failed_run_as_an_error():
    from student import Answer, Student

    student = Student(7, "http://host")
    student._check(Answer(0.1, True, 1, 0, chart_bytes=[b'"0\\u00b7s7a", "1\\u00b7s7b"']))
    assert student.leaks == 0 and student.errors == []
    student._check(Answer(0.1, True, 1, 0, chart_bytes=[b'"0\\u00b7s7a", "1\\u00b7s12c"']))
    student._check(Answer(0.1, False, 0, 1))
    assert student.leaks == 1 and len(student.errors) == 2
    assert "s7a s7b s7c s7d s7e" in student.source and "src=" in student.link()


def test_the_class_table_compares_each_run_with_one_student_and_names_what_gives_first():
    from class_load import table_rows, verdict

    def run(students, p90, errors=0):
        return dict(students=students, moves=10, p50=p90 / 2, p90=p90, errors=errors, leaks=0, cpu_per_move=0.05,
                    rss=800.0)
    runs = [run(1, 0.1), run(30, 0.19), run(60, 0.5)]
    assert "| 30 | 10 | 95 / 190 | 1.90× | 0 | 0 | 50 ms | 800 MB |" in table_rows(runs)
    said = verdict(runs)
    assert "At 30 students: p90 1.90× one student's, 0 errors, 0 leaks — target (≤ 2×, 0, 0) met." in said
    assert "At 60 students: latency first (p90 5.0× one student's)" in said
    assert "errors first" in verdict([run(1, 0.1), run(60, 0.1, errors=3)])
