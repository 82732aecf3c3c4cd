"""The environment of a Python child process a test starts: its own import paths first, then those the tests run
with (a site directory given by PYTHONPATH, as on a machine whose TensorFlow is not installed, stays visible)."""

import os


def child_env(*paths, **variables) -> dict:
    """``os.environ`` with ``paths`` put before PYTHONPATH's entries and ``variables`` set."""
    inherited = [entry for entry in os.environ.get("PYTHONPATH", "").split(os.pathsep) if entry]
    return dict(os.environ, **variables, PYTHONPATH=os.pathsep.join([*map(str, paths), *inherited]))
