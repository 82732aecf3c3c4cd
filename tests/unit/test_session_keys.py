"""UI state declared once: no module but ui/state.py touches ``st.session_state``, and every key the others name
through its accessors is a field or declared in `ui.state.SESSION_KEYS`."""

import ast
from pathlib import Path

import pytest

from ui import state

ROOT = Path(__file__).resolve().parents[2]
UI_FILES = sorted([ROOT / "app.py", *(ROOT / "app_pages").glob("*.py"), *(ROOT / "ui").glob("*.py")])
KEYED = {"get", "read", "has", "put", "pop", "setdefault", "drop"}  # the accessors whose first argument is a key
KEYWORDS = {"update", "open_page"}  # the accessors that take keys as keyword arguments


def _named_keys(tree: ast.AST) -> list[str]:
    """Every key named as a string (or a `ui.state` constant) in a call of the state accessors."""
    keys = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "state"):
            continue
        if node.func.attr in KEYED and node.args:
            first = node.args[0]
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                keys.append(first.value)
            elif isinstance(first, ast.Attribute) and isinstance(first.value, ast.Name) and first.value.id == "state":
                keys.append(getattr(state, first.attr))
        if node.func.attr in KEYWORDS:
            keys += [keyword.arg for keyword in node.keywords if keyword.arg]
    return keys


@pytest.mark.parametrize("path", UI_FILES, ids=lambda path: str(path.relative_to(ROOT)))
def test_only_ui_state_touches_the_session_and_every_key_named_is_declared(path):
    text = path.read_text()
    if path.name != "state.py":
        assert "st.session_state" not in text, f"{path.name} reads or writes st.session_state: use ui.state"
    for key in _named_keys(ast.parse(text)):
        assert state._declared(key) == key


def test_an_undeclared_key_is_refused_by_name():
    with pytest.raises(KeyError, match="'no_such_key' is neither a field nor a session key"):
        state.get("no_such_key")
