import os
import sys

import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")  # TensorFlow's C++ start-up lines stay out of the test output
# Models trained in a test are kept in memory only, unless a test gives them a data directory of its own
# (tests/unit/test_kept_on_disk.py): nothing lands in the user's cache, and no test reads another's.
os.environ.setdefault("ATTENTION_LAB_DATA_DIR", "off")
# The background lane's child at the tests' own priority: at its default nice 19 it yields to the other test process
# (the same session, so the same scheduling group), and with both cores busy there one of SmolLM2's maps, priced at
# 33 s, was still running after 240 s (at nice 0: 65 s). That it yields to its own server is its unit test's
# (tests/unit/test_heavy_lane.py sets a niceness and reads it back), not the pages'.
os.environ.setdefault("ATTENTION_LAB_HEAVY_NICE", "0")


def pytest_collection_modifyitems(items):
    """A test's folder is its tier: tests/app runs pages through AppTest, tests/browser drives Chromium, and each is
    marked so (`make test-fast` leaves both out), whether or not its module says so."""
    for item in items:
        tier = item.path.parent.name
        if tier in ("app", "browser"):
            item.add_marker(tier)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    """The engine's idle tracer (transformer/runtime/engine_thread.py) works only in the tests marked `idle_traces` and
    in the browser tier's servers. In a test process it traced the cached models' functions whenever a test paused
    for a second, all through the unit and AppTest tiers, competing for the 2 cores: eight engine test files took
    111 -> 95 s without it, the AppTest tier 170 -> 123 s wall (29 November). A traced function computes what the
    eager one does (tests/unit/test_live.py checks it). Set before the test's fixtures, which may run models too."""
    engine = sys.modules.get("transformer.runtime.engine_thread")  # imported by collection where a test uses it
    if engine is None:
        return
    if item.get_closest_marker("idle_traces") or item.path.parent.name == "browser":
        engine._IDLE_TRACER.__dict__.pop("busy", None)  # the tracer's own method again
    else:
        engine._IDLE_TRACER.busy = lambda: None  # no request arms it
