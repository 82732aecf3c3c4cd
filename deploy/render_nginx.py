"""Fill in deploy/nginx.conf.template for replicas outside Docker (nginx's image fills it in itself).

    python deploy/render_nginx.py --listen 8080 --replica 127.0.0.1:8601 --replica 127.0.0.1:8602 \\
        --dir /tmp/attention-lab-nginx
    nginx -c /tmp/attention-lab-nginx/nginx.conf -p /tmp/attention-lab-nginx

Only ${LISTEN}, ${UPSTREAMS} and ${RUNTIME_DIR} are replaced: nginx's own $variables stay.
"""

from __future__ import annotations

import argparse
import string
from pathlib import Path

TEMPLATE = Path(__file__).resolve().parent / "nginx.conf.template"


def render(listen: str, replicas: list[str], runtime_dir: Path) -> str:
    servers = " ".join(f"server {replica} max_fails=1 fail_timeout=5s;" for replica in replicas)
    return string.Template(TEMPLATE.read_text()).safe_substitute(LISTEN=listen, UPSTREAMS=servers,
                                                                 RUNTIME_DIR=str(runtime_dir))


def write(listen: str, replicas: list[str], runtime_dir: Path) -> Path:
    """The filled-in configuration at ``runtime_dir/nginx.conf`` (the folder made, writable by nginx's workers)."""
    runtime_dir.mkdir(parents=True, exist_ok=True)
    runtime_dir.chmod(0o777)  # started as root, nginx's workers run as nobody and write their temporary files here
    path = runtime_dir / "nginx.conf"
    path.write_text(render(listen, replicas, runtime_dir))
    return path


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--listen", default="8080")
    parser.add_argument("--replica", action="append", required=True, help="host:port of one app replica")
    parser.add_argument("--dir", type=Path, default=Path("/tmp/attention-lab-nginx"))
    args = parser.parse_args()
    path = write(args.listen, args.replica, args.dir)
    print(f"nginx -c {path} -p {args.dir}")


if __name__ == "__main__":
    main()
