"""A PostgreSQL server of the tests' own, on loopback: Debian's ``postgresql`` (initdb and pg_ctl) started in a
temporary folder on a free port, trust authentication, no fsync; stopped and removed after. As root (CI's
containers) it runs as the ``postgres`` user, as PostgreSQL requires. Without PostgreSQL installed it yields None,
unless ``ATTENTION_LAB_REQUIRE_POSTGRES`` is set (CI: .ci/run installs it), when that is an error."""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

REQUIRE_ENV = "ATTENTION_LAB_REQUIRE_POSTGRES"
USER = "lab"


def _tool(name: str) -> str | None:
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    return found[-1] if found else shutil.which(name)


def missing_reason() -> str | None:
    if _tool("initdb") and _tool("pg_ctl"):
        return None
    return "PostgreSQL is not installed (Debian's postgresql: apt-get install postgresql)"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _as_server_user(command: list[str]) -> list[str]:
    return ["runuser", "-u", "postgres", "--", *command] if os.geteuid() == 0 else command


_servers: dict[str, tuple[Path, str]] = {}  # a running server's URL -> (its data folder, its options)


def _run(command: list[str]) -> None:
    subprocess.run(_as_server_user(command), check=True, capture_output=True, timeout=120)


def start(data: Path, url: str) -> None:
    """Start the server of ``url`` again (after `stop`)."""
    _run([_tool("pg_ctl"), "-D", str(data), "-o", _servers[url][1], "-l", str(data.parent / "log"), "-w", "-t", "60",
          "start"])


def stop(data: Path) -> None:
    """Stop a server at once (its connections cut: the database going away mid-class)."""
    _run([_tool("pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"])


def running_data_dir(url: str) -> Path:
    return _servers[url][0]


@contextlib.contextmanager
def postgres_server():
    """Yield a SQLAlchemy URL (``postgresql+psycopg://…``) of a fresh server, or None where there is none."""
    reason = missing_reason()
    if reason:
        if os.environ.get(REQUIRE_ENV):
            raise RuntimeError(f"{REQUIRE_ENV} is set, but {reason}")
        yield None
        return
    folder = Path(tempfile.mkdtemp(prefix="al-pg-"))
    data, port = folder / "data", _free_port()
    if os.geteuid() == 0:
        shutil.chown(folder, "postgres")
    url = f"postgresql+psycopg://{USER}@127.0.0.1:{port}/postgres"
    _servers[url] = data, f"-c listen_addresses=127.0.0.1 -p {port} -k {folder} -c fsync=off -c full_page_writes=off"
    try:
        _run([_tool("initdb"), "-D", str(data), "-U", USER, "--auth=trust", "-E", "UTF8", "--no-sync"])
        start(data, url)
        yield url
    finally:
        if (data / "postmaster.pid").exists():
            subprocess.run(_as_server_user([_tool("pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"]),
                           capture_output=True, timeout=60)
        _servers.pop(url, None)
        shutil.rmtree(folder, ignore_errors=True)
