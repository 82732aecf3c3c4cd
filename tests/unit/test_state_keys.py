"""State by attribute (issue 79, step 4): outside `ui/state.py` the UI names a field by attribute (`state.F.<name>`)
and a session key by its declared constant, never by a string; a field's default is written once (`state.FIELDS`),
never again at a call; the random-weights and preset names come from the engine. A mistyped name fails where the
line runs, so in the tests first. Each check also runs on a planted violation."""

import ast
from pathlib import Path

import pytest

from ui import state

ROOT = Path(__file__).resolve().parents[2]
ACCESSORS = {"get", "put", "read", "has", "pop", "setdefault", "drop", "value", "correct", "default_of", "widget_value"}
SOURCE_NAMES = ("random",)
SOURCE_PREFIXES = ("hub:", "upload:", "image:")


def ui_files():
    yield ROOT / "app.py"
    for folder in ("ui", "app_pages"):
        yield from sorted(path for path in (ROOT / folder).rglob("*.py") if path.name != "state.py"
                          or path.parent.name != "ui")


def _is_state_call(node) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ACCESSORS \
        and isinstance(node.func.value, ast.Name) and node.func.value.id == "state"


def string_keys(source: str) -> list[str]:
    """Lines of ``source`` that call a state accessor with a string key, index `FIELDS` by a string, or give a
    field an inline default (``state.get(F.x, default)``)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if _is_state_call(node) and node.args:
            first = node.args[0]
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                found.append(f"{node.lineno}: state.{node.func.attr}({first.value!r})")
            elif node.func.attr == "get" and len(node.args) > 1 and isinstance(first, ast.Attribute) \
                    and isinstance(first.value, ast.Name) and first.value.id == "F":
                found.append(f"{node.lineno}: state.get(F.{first.attr}, …): an inline default")
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) and node.value.attr == "FIELDS" \
                and isinstance(node.slice, ast.Constant):
            found.append(f"{node.lineno}: FIELDS[{node.slice.value!r}]")
    return found


def source_literals(source: str) -> list[str]:
    """Lines of ``source`` whose strings spell a model source's name or prefix (the engine's names are used)."""
    return [f"{node.lineno}: {node.value!r}" for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.Constant) and isinstance(node.value, str)
            and (node.value in SOURCE_NAMES or node.value.startswith(SOURCE_PREFIXES))]


def test_no_state_key_is_a_string_outside_the_state_module():
    found = {path.relative_to(ROOT).as_posix(): string_keys(path.read_text()) for path in ui_files()}
    assert {path: lines for path, lines in found.items() if lines} == {}
    planted = 'state.get("weights")\nstate.get(F.device, "auto")\nx = state.FIELDS["src"].default\n'
    assert [line.split(":")[0] for line in string_keys(planted)] == ["1", "2", "3"]


def test_no_source_name_or_prefix_is_spelled_in_the_ui():
    found = {path.relative_to(ROOT).as_posix(): source_literals(path.read_text()) for path in ui_files()}
    assert {path: lines for path, lines in found.items() if lines} == {}
    assert len(source_literals('weights = "random"\nkey = f"hub:{name}"\n')) == 2


SOURCE_TYPES = {"RandomWeights", "Trained", "External"}


def type_switches(source: str) -> list[str]:
    """Lines of ``source`` that ask a model source its type (an ``isinstance`` of a source class, or one imported)
    rather than what it supports (issue 79, step 2)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and SOURCE_TYPES & {alias.name for alias in node.names}:
            found.append(f"{node.lineno}: imports {sorted(SOURCE_TYPES & {a.name for a in node.names})}")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "isinstance" \
                and SOURCE_TYPES & {n.id for n in ast.walk(node.args[1]) if isinstance(n, ast.Name)}:
            found.append(f"{node.lineno}: isinstance of a source")
    return found


def test_the_ui_asks_a_source_what_it_supports_never_its_type():
    found = {path.relative_to(ROOT).as_posix(): type_switches(path.read_text()) for path in ui_files()}
    found["ui/state.py"] = type_switches((ROOT / "ui" / "state.py").read_text())
    assert {path: lines for path, lines in found.items() if lines} == {}
    planted = "from transformer.service import External\nif isinstance(source, (Trained, External)):\n    pass\n"
    assert len(type_switches(planted)) == 2


# The engine's own run and decoding (issue 79, step 2): a model from outside runs itself (its source's `own_run` and
# `own_decoding`, transformer/live/outside.py); these modules name neither it nor its registry, nor ask `inside`.
OUTSIDE_WORDS = ("EXTERNAL", "supports.inside", "External", "outside_")


def outside_branches(source: str) -> list[str]:
    return [f"{number}: {word}" for number, line in enumerate(source.splitlines(), 1) for word in OUTSIDE_WORDS
            if word in line and not line.lstrip().startswith("#")]


def test_the_engines_run_and_decoding_leave_a_model_from_outside_to_its_source():
    live = ROOT / "transformer" / "live"
    found = {name: outside_branches((live / name).read_text()) for name in ("run.py", "decode.py")}
    assert found == {"run.py": [], "decode.py": []}
    planted = "from transformer.external.registry import EXTERNAL\nif not plan.source.supports.inside:\n"
    assert len(outside_branches(planted)) == 2


def test_a_mistyped_field_or_key_fails_at_once():
    assert state.F.weights == "weights"
    with pytest.raises(AttributeError, match="wieghts"):
        state.F.wieghts  # noqa: B018
    with pytest.raises(KeyError, match="_my_modles"):
        state.get("_my_modles")


def unknown_names(source: str) -> list[str]:
    """Lines of ``source`` that name a field that does not exist: ``F.<name>`` or a keyword of ``state.update(…)``
    that is neither a field nor a declared session key. `F` and `update` check their names when the line runs; this
    checks every line, run or not."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "F" \
                and node.attr not in state.FIELDS:
            found.append(f"{node.lineno}: F.{node.attr}")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "update" \
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "state":
            found += [f"{node.lineno}: state.update({word.arg}=…)" for word in node.keywords
                      if word.arg is not None and word.arg not in state.FIELDS and word.arg not in state.SESSION_KEYS]
    return found


def test_every_field_named_by_attribute_or_keyword_exists_even_on_a_line_no_test_runs():
    tests = sorted((ROOT / "tests").rglob("*.py"))
    wrong = {str(path.relative_to(ROOT)): names for path in [*ui_files(), ROOT / "ui" / "state.py", *tests]
             if (names := unknown_names(path.read_text()))}
    assert wrong == {}


def test_the_unknown_name_check_finds_a_planted_typo():
    planted = "from ui.state import F\nstate.put(F.seq_lne, 3)\nstate.update(src='a', sqe_len=4)\n"
    assert sorted(unknown_names(planted)) == ["2: F.seq_lne", "3: state.update(sqe_len=…)"]
