"""The engine's one order, lowest first: runtime → core → tasks → analysis and external → decoding → training →
live → the package face. A module imports only from its own layer or lower ones (read from the source with
`ast`, imports inside functions included); no import chain inside the engine is longer than `LONGEST_CHAIN`
modules; no package loads its modules lazily to dodge a cycle. Check it on a planted arrow:
`test_the_order_test_fails_on_an_arrow_against_it`."""

from __future__ import annotations

import ast
import functools
from pathlib import Path

ENGINE = Path(__file__).resolve().parents[2] / "transformer"
LAYERS = {"runtime": 0, "core": 1, "tasks": 2, "analysis": 3, "external": 3, "decoding": 4, "training": 5, "live": 6}
FACE = 7  # transformer/__init__.py: the package's public face, above everything
# The longest chain today: the face → live (walkthrough → inputs → model_cache) → training.pretrained → the tasks
# package (→ a task → tasks.base → core.tokens). The goal is 8; this keeps it from growing meanwhile.
LONGEST_CHAIN = 10


def module_name(path: Path) -> str:
    parts = path.relative_to(ENGINE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def layer_of(module: str) -> int:
    """A module's layer: its sub-package's, or the face's (``transformer`` itself)."""
    parts = module.split(".")
    return FACE if len(parts) == 1 else LAYERS[parts[1]]


def engine_imports() -> dict[str, set[str]]:
    """``{module: the engine modules it imports}`` for every module of ``transformer/``."""
    modules = {module_name(path): path for path in ENGINE.rglob("*.py")}
    found = {}
    for module, path in modules.items():
        names = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "transformer":
                names.update(f"{node.module}.{alias.name}" if f"{node.module}.{alias.name}" in modules
                             else node.module for alias in node.names)
            elif isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names if alias.name.split(".")[0] == "transformer")
        found[module] = {name for name in names if name in modules and name != module}
    return found


def against_the_order(imports: dict[str, set[str]]) -> list[str]:
    """Every import of a higher layer, as "importer -> imported"."""
    return sorted(f"{module} -> {name}" for module, names in imports.items() for name in names
                  if layer_of(name) > layer_of(module))


def longest_chain(imports: dict[str, set[str]]) -> list[str]:
    """The longest chain of imports (modules, first to last); ValueError on a circle."""
    @functools.cache
    def from_(module: str, seen: frozenset = frozenset()) -> tuple:
        if module in seen:
            raise ValueError(f"a circle through {module}")
        chains = [from_(name, seen | {module}) for name in imports.get(module, ())]
        return (module, *max(chains, key=len, default=()))
    return list(max((from_(module) for module in imports), key=len))


def test_no_engine_module_imports_a_layer_above_its_own():
    assert against_the_order(engine_imports()) == []


def test_the_order_test_fails_on_an_arrow_against_it():
    planted = {"transformer.core.model": {"transformer.live.run"}, "transformer.live.run": {"transformer.core.model"}}
    assert against_the_order(planted) == ["transformer.core.model -> transformer.live.run"]
    assert against_the_order({"transformer.analysis.cost": {"transformer.training.train"}}) != []


def test_no_import_chain_grows_and_there_is_no_circle():
    chain = longest_chain(engine_imports())
    assert len(chain) <= LONGEST_CHAIN, " -> ".join(chain)


def test_no_package_loads_its_modules_lazily():
    lazy = [str(path) for path in ENGINE.rglob("__init__.py")
            if any(isinstance(node, ast.FunctionDef) and node.name == "__getattr__"
                   for node in ast.parse(path.read_text()).body)]
    assert lazy == []
