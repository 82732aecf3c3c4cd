"""One name per computation (issue 79, step 3): `ui/data.py` keeps the engine's names (each function, or its cached
`_name` twin, is named after the one `transformer.service` call it makes) and passes no number positionally (a seed
is a keyword). Each check also runs on a planted violation."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "ui" / "data.py"
ESTIMATES = {"run_cost", "check_cost", "measure_cost", "COST_LENGTHS"}  # what a call's cost is, asked beside it


def service_calls(function: ast.FunctionDef) -> set[str]:
    return {node.func.attr for node in ast.walk(function) if isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "service"} - ESTIMATES


def _is_door(function: ast.FunctionDef) -> bool:
    return any(isinstance(decorator, ast.Call) and getattr(decorator.func, "id", "") == "door"
               for decorator in function.decorator_list)


def renamed(source: str) -> list[str]:
    """The engine calls of ``source`` (its `door` functions) named otherwise than the service call each makes, or
    whose cached ``_name`` has no public ``name`` beside it."""
    functions = [node for node in ast.parse(source).body if isinstance(node, ast.FunctionDef)]
    names = {function.name for function in functions}
    found = []
    for function in filter(_is_door, functions):
        calls = service_calls(function)
        if calls != {function.name.lstrip("_")}:
            found.append(f"{function.name} calls {sorted(calls)}")
        elif function.name.startswith("_") and function.name[1:] not in names:
            found.append(f"{function.name} has no {function.name[1:]}")
    return found


def positional_numbers(source: str) -> list[str]:
    """Service calls of ``source`` given a number positionally (a bare seed)."""
    return [f"{node.lineno}: service.{node.func.attr}" for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name) and node.func.value.id == "service"
            and any(isinstance(arg, ast.Constant) and isinstance(arg.value, (int, float)) for arg in node.args)]


def test_the_pages_calls_keep_the_engines_names():
    assert renamed(DATA.read_text()) == []
    planted = "@door()\ndef ablation_measure(name):\n    return service.measure_ablation(name)\n"
    assert renamed(planted) == ["ablation_measure calls ['measure_ablation']"]


def test_no_service_call_is_given_a_bare_number():
    assert positional_numbers(DATA.read_text()) == []
    assert positional_numbers("service.faithfulness(name, count, 0, device)\n") == ["1: service.faithfulness"]


def test_every_engine_call_goes_through_the_door():
    """Each cached call is a `door` (cache, message and status in one place), not a hand-written pair."""
    tree = ast.parse(DATA.read_text())
    hand_cached = [node.name for node in tree.body if isinstance(node, ast.FunctionDef) and any(
        isinstance(decorator, ast.Call) and getattr(decorator.func, "attr", "") == "cache_resource"
        for decorator in node.decorator_list)]
    assert hand_cached == ["_run_live"]  # the page's run: its cost is routed first (`_run_live_result`)
