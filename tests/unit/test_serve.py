"""What `make run` prints: Streamlit's address, one line naming the engine's device, and nothing else."""

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from browser_support import free_port

from ui.preload import START_UP_NOISE

ROOT = Path(__file__).resolve().parents[2]
DEVICE_LINE = "Attention Lab: the engine runs on"


@pytest.mark.slow
def test_make_run_prints_the_device_and_no_start_up_noise_or_warning(tmp_path):
    env = {key: value for key, value in os.environ.items() if key != "TF_CPP_MIN_LOG_LEVEL"}
    log_path = tmp_path / "serve.log"
    with open(log_path, "w") as log:
        server = subprocess.Popen([sys.executable, "serve.py", "--server.port", str(free_port())],
                                  cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + 120
            while DEVICE_LINE not in log_path.read_text() and time.monotonic() < deadline:
                time.sleep(0.5)
        finally:
            server.terminate()
            server.wait(timeout=30)
    printed = log_path.read_text()
    assert DEVICE_LINE in printed, printed
    assert "WARNING" not in printed.upper().replace("WARNINGS", ""), printed
    assert not [noise for noise in START_UP_NOISE if noise in printed], printed
    lines = [line for line in printed.splitlines() if line.strip() and "Stopping" not in line]
    assert len(lines) == 3, lines  # "You can now view …", its URL, the device line


STOPPING_SERVER = """
import threading, time
from transformer import service  # imported, as `make run`'s preload has done before it warms up
from ui import data, preload

def warm_up_while_stopping():
    while threading.main_thread().is_alive():  # until the main thread has returned: the server is stopping
        time.sleep(0.05)
    time.sleep(0.5)  # the interpreter's exit hooks have run: no executor takes new work now
    preload._warm_up()

threading.Thread(target=warm_up_while_stopping).start()
"""

# The server stops while the engine still computes a request: the executors' exit hook refuses new work at once but
# waits for that computation, and the main thread counts as alive until it ends (CI's run of 28 November).
STOPPING_WHILE_THE_ENGINE_COMPUTES = """
import threading, time
from transformer import service
from transformer.runtime.engine_thread import on_engine_thread
from ui import data, preload

computing = on_engine_thread(lambda: time.sleep(3))
threading.Thread(target=computing, daemon=True).start()

def warm_up_after_the_main_thread_returned():
    time.sleep(1.0)
    preload._warm_up()

threading.Thread(target=warm_up_after_the_main_thread_returned, daemon=True).start()
time.sleep(0.3)
"""


@pytest.mark.slow
@pytest.mark.parametrize("script", [STOPPING_SERVER, STOPPING_WHILE_THE_ENGINE_COMPUTES],
                         ids=["after-the-exit-hooks", "while-the-engine-computes"])
def test_a_warm_up_cut_short_by_the_server_stopping_prints_nothing(script):
    """`make run` stopped (Ctrl-C, a replica's restart) while the background warm-up still runs: not a failure."""
    stopped = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert stopped.returncode == 0, stopped.stderr
    assert stopped.stdout.strip() == "" and "Traceback" not in stopped.stderr, (stopped.stdout, stopped.stderr)
