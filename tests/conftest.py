import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")  # TensorFlow's C++ start-up lines stay out of the test output
# Models trained in a test are kept in memory only, unless a test gives them a data directory of its own
# (tests/unit/test_kept_on_disk.py): nothing lands in the user's cache, and no test reads another's.
os.environ.setdefault("ATTENTION_LAB_DATA_DIR", "off")


def pytest_collection_modifyitems(items):
    """A test's folder is its tier: tests/app runs pages through AppTest, tests/browser drives Chromium, and each is
    marked so (`make test-fast` leaves both out), whether or not its module says so."""
    for item in items:
        tier = item.path.parent.name
        if tier in ("app", "browser"):
            item.add_marker(tier)
