"""The browser code's declarations of what the server sends it and reads back: ``ui/frontend/server.d.ts``, written
from `ui.chart_protocol`'s messages and `ui.chart.constants`; and each bundle's ``tsconfig.<name>.json``, the files
`ui.chart.BUNDLES` joins. TypeScript's checker holds each bundle to them (`make lint`), and a test holds the files
to what this module writes: the protocol and the bundles are declared once, in Python.

``python -m ui.browser_types`` writes the files; ``--check`` says whether they are current."""

from __future__ import annotations

import argparse
import json
import os
import sys
import typing
from pathlib import Path

from ui import chart_protocol as protocol
from ui.chart import BUNDLES, FRONTEND_DIR, constants

DECLARATIONS = FRONTEND_DIR / "server.d.ts"
HAND_WRITTEN = "browser.d.ts"  # what the browser code keeps (a chart's state): declared there, by hand
SCALARS = {int: "number", float: "number", str: "string", bool: "boolean", dict: "Record<string, any>"}


def ts_type(annotation) -> str:
    """A Python annotation of the protocol (scalars, lists, dicts, literals) as TypeScript writes it."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.NotRequired:
        return ts_type(args[0])
    if origin is typing.Literal:
        return " | ".join(json.dumps(value) for value in args)
    if origin is list:
        inner = ts_type(args[0])
        return f"({inner})[]" if "|" in inner else f"{inner}[]"
    if annotation in SCALARS:
        return SCALARS[annotation]
    raise ValueError(f"No TypeScript type for the protocol's annotation {annotation!r}")


def interface(message) -> str:
    """One TypedDict as a TypeScript interface: its keys in order, the optional ones with ``?``."""
    hints = typing.get_type_hints(message, include_extras=True)
    lines = [f"  {name}{'?' if typing.get_origin(hint) is typing.NotRequired else ''}: {ts_type(hint)};"
             for name, hint in hints.items()]
    doc = f"/** {' '.join((message.__doc__ or '').split())} */\n" if message.__doc__ else ""
    return f"{doc}interface {message.__name__} {{\n" + "\n".join(lines) + "\n}\n"


def constant_type(value) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return json.dumps(value)
    return "{ " + " ".join(f"{name}: {constant_type(item)};" for name, item in value.items()) + " }"


def declarations() -> str:
    """The text of ``ui/frontend/server.d.ts``."""
    kinds = {typing.get_args(typing.get_type_hints(message)["kind"])[0]: message.__name__
             for message in protocol.MESSAGES}
    heads = " | ".join(f'Omit<{kinds[kind]}, "{key}">' for kind, key in protocol.BULK.items())
    return "\n".join([
        "// Written by `python -m ui.browser_types` from ui/chart_protocol.py and ui/chart.py's constants.",
        "",
        "/** The server's constants (ui/chart.py constants()), at the head of each component's code. */",
        f"declare const AL: Readonly<{constant_type(constants())}>;",
        "",
        *[interface(message) for message in (*protocol.MESSAGES, *protocol.REPLIES)],
        "/** A chart's message but its last key (AL.BULK): what chart_messages.js parses alone. */",
        f"type MessageHead = {heads};",
        "",
    ])


def tsconfig(files) -> str:
    """A bundle's checker settings: the shared ones, the declarations, and the bundle's files in its order."""
    listed = [HAND_WRITTEN, DECLARATIONS.name] + [os.path.relpath(FRONTEND_DIR / name, FRONTEND_DIR) for name in files]
    return json.dumps({"extends": "./tsconfig.base.json", "files": listed}, indent=2) + "\n"


def written() -> dict[Path, str]:
    """Every file this module writes, with its text."""
    return {DECLARATIONS: declarations(),
            **{FRONTEND_DIR / f"tsconfig.{name}.json": tsconfig(files) for name, files in BUNDLES.items()}}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="fail when the file is not what would be written")
    files = written()
    if parser.parse_args().check:
        stale = [path.name for path, text in files.items() if not path.exists() or path.read_text() != text]
        if stale:
            print(f"Out of date in ui/frontend: {', '.join(stale)}. Run: python -m ui.browser_types", file=sys.stderr)
        return 1 if stale else 0
    for path, text in files.items():
        path.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
