"""Fill in deploy/nginx.conf.template for replicas outside Docker (nginx's image fills it in itself).

    python deploy/render_nginx.py --listen 8080 --replica 127.0.0.1:8601 --replica 127.0.0.1:8602 \\
        --dir /tmp/attention-lab-nginx
    nginx -c /tmp/attention-lab-nginx/nginx.conf -p /tmp/attention-lab-nginx

Only ${LISTEN}, ${UPSTREAMS}, ${RUNTIME_DIR} and ${UPLOAD_MB} are replaced: nginx's own $variables stay. The body
limit follows the app's upload limit (ATTENTION_LAB_UPLOAD_MB, 500 MB by default) unless --upload-mb says otherwise.
"""

from __future__ import annotations

import argparse
import math
import os
import string
from pathlib import Path

TEMPLATE = Path(__file__).resolve().parent / "nginx.conf.template"


def body_mb(upload_mb: float | None = None) -> int:
    """nginx's body limit in MB: the app's upload limit (``upload_mb``, else ATTENTION_LAB_UPLOAD_MB, else 500)
    rounded up, and 1 MB for the upload form's own bytes."""
    limit = upload_mb if upload_mb is not None else float(os.environ.get("ATTENTION_LAB_UPLOAD_MB") or 500)
    return math.ceil(limit) + 1


def render(listen: str, replicas: list[str], runtime_dir: Path, upload_mb: float | None = None) -> str:
    servers = " ".join(f"server {replica} max_fails=1 fail_timeout=5s;" for replica in replicas)
    return string.Template(TEMPLATE.read_text()).safe_substitute(LISTEN=listen, UPSTREAMS=servers,
                                                                 RUNTIME_DIR=str(runtime_dir),
                                                                 UPLOAD_MB=str(body_mb(upload_mb)))


def write(listen: str, replicas: list[str], runtime_dir: Path, upload_mb: float | None = None) -> Path:
    """The filled-in configuration at ``runtime_dir/nginx.conf`` (the folder made, writable by nginx's workers)."""
    runtime_dir.mkdir(parents=True, exist_ok=True)
    runtime_dir.chmod(0o777)  # started as root, nginx's workers run as nobody and write their temporary files here
    closed = [str(folder) for folder in runtime_dir.resolve().parents if not folder.stat().st_mode & 0o001]
    if closed:  # a request body over 16 KB (an upload) is written there: nginx then answers 500
        raise ValueError(f"nginx's workers cannot reach {runtime_dir}: {closed[0]} is closed to other users. "
                         "Choose a folder they can reach (under /tmp, say).")
    path = runtime_dir / "nginx.conf"
    path.write_text(render(listen, replicas, runtime_dir, upload_mb))
    return path


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--listen", default="8080")
    parser.add_argument("--replica", action="append", required=True, help="host:port of one app replica")
    parser.add_argument("--dir", type=Path, default=Path("/tmp/attention-lab-nginx"))
    parser.add_argument("--upload-mb", type=float, help="the app's upload limit (default: ATTENTION_LAB_UPLOAD_MB)")
    args = parser.parse_args()
    path = write(args.listen, args.replica, args.dir, args.upload_mb)
    print(f"nginx -c {path} -p {args.dir}")


if __name__ == "__main__":
    main()
