"""Replicas behind Debian's nginx on loopback, with the project's own configuration (deploy/): nginx started on a
rendered configuration, and which replica answered each route (its access log)."""

import contextlib
import importlib.util
import re
import shutil
import socket
import subprocess
import time
from pathlib import Path

from browser_support import headless_chromium, require_chromium

ROOT = Path(__file__).resolve().parents[2]
_SPEC = importlib.util.spec_from_file_location("render_nginx", ROOT / "deploy" / "render_nginx.py")
render_nginx = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(render_nginx)
write = render_nginx.write  # the project's own rendering of deploy/nginx.conf.template
NGINX = shutil.which("nginx") or "/usr/sbin/nginx"
MAX_SESSIONS = 16  # random routes: all of 16 on one replica comes once in ~30,000 runs at a 50/50 split


@contextlib.contextmanager
def nginx(path: Path, runtime: Path, port: int):
    """nginx on ``path``'s configuration, once it accepts connections on ``port``."""
    checked = subprocess.run([NGINX, "-t", "-c", str(path), "-p", str(runtime)], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stderr
    process = subprocess.Popen([NGINX, "-c", str(path), "-p", str(runtime), "-g", "daemon off;"])
    try:
        _listening(port, process)
        yield process
    finally:
        process.terminate()
        process.wait(10)


def _listening(port: int, process, timeout: float = 30.0) -> None:
    """Until ``port`` accepts a connection: nginx binds it a moment after it starts, and a page opened before that
    was refused (a full run on a busy host, 29 November). A connection that sends no request is not logged."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert process.poll() is None, f"nginx exited with {process.returncode}"
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
            return
        time.sleep(0.05)
    raise TimeoutError(f"nginx did not listen on port {port} within {timeout} s")


def routes(runtime: Path) -> dict:
    """{route key: [the replica that answered each request made with it, in order]} from nginx's access log (a
    request is logged when it ends: an open WebSocket is not there yet; the pages and health checks are)."""
    seen = {}
    for line in (runtime / "access.log").read_text().splitlines():
        match = re.search(r'" \d+ route=(\S+) upstream=(.+)$', line)
        if match and match.group(2) != "-":
            seen.setdefault(match.group(1), []).append(match.group(2).split(",")[-1].strip())
    return seen


@contextlib.contextmanager
def nginx_browser():
    """Chromium for a deploy test: skipped without Chromium or nginx here, required in CI."""
    require_chromium(None if Path(NGINX).exists() else f"{NGINX} is not installed", "deploy tests",
                     " (apt-get install -y chromium nginx)")
    with headless_chromium() as browser:
        yield browser
