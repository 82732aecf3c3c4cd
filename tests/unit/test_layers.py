"""The engine's one order, lowest first: runtime → core → tasks → analysis and external → decoding → training →
live → the package face. A module imports only from its own layer or lower ones (read from the source with
`ast`, imports inside functions included); no import chain inside the engine is longer than `LONGEST_CHAIN`
modules; no package loads its modules lazily to dodge a cycle. Check it on a planted arrow:
`test_the_order_test_fails_on_an_arrow_against_it`."""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

ENGINE = Path(__file__).resolve().parents[2] / "transformer"
LAYERS = {"runtime": 0, "core": 1, "tasks": 2, "analysis": 3, "external": 3, "decoding": 4, "training": 5, "live": 6}
FACE = 7  # transformer/__init__.py: the package's public face, above everything
# The longest chain today: the face → the one door (service) → live (warm_up → run → plan → sources) → training
# (answers) → decoding → tasks (translate → base) → core (tokens). 11 before the face re-exported the service (issue
# 79, step 3: one door) and the spec became a leaf; the face's link is that design's. This keeps it from growing.
LONGEST_CHAIN = 12


def module_name(path: Path) -> str:
    parts = path.relative_to(ENGINE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


DOORS = ("transformer", "transformer.service")  # the package face and the app's one door, above every layer
APP = [ENGINE.parent / "app.py", *(ENGINE.parent / "ui").rglob("*.py"), *(ENGINE.parent / "app_pages").glob("*.py")]


def layer_of(module: str) -> int:
    """A module's layer: its sub-package's, or the face's (``transformer`` itself and its service door)."""
    parts = module.split(".")
    return FACE if module in DOORS else LAYERS[parts[1]]


def imported_engine_modules(path: Path) -> set[str]:
    """The ``transformer`` modules a file imports (``from transformer.x import …``, ``import transformer.x``)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "transformer":
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name.split(".")[0] == "transformer")
    return found


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


def test_the_app_enters_the_engine_through_one_door():
    """``ui/``, ``app_pages/`` and ``app.py`` import ``transformer`` or ``transformer.service``, no sub-package."""
    side_doors = {f"{path.relative_to(ENGINE.parent)}: {module}" for path in APP
                  for module in imported_engine_modules(path) if module not in DOORS}
    assert side_doors == set()


def test_the_door_test_fails_on_a_side_door(tmp_path):
    page = tmp_path / "page.py"
    page.write_text("from transformer.live.run import run_live\nfrom transformer.service import decode\n")
    assert imported_engine_modules(page) - set(DOORS) == {"transformer.live.run"}


def test_the_engine_thread_is_applied_at_the_doors_only():
    """What computes runs on the engine thread because the one door wraps it (`PricedCall` in the service, which
    applies `on_engine_thread` with the call's price; the package face re-exports it); the engine's modules call each
    other directly."""
    applied = sorted(module_name(path) for path in ENGINE.rglob("*.py") if "on_engine_thread" in path.read_text())
    assert applied == ["transformer.live.priced_calls", "transformer.runtime.engine_thread"]


# Where a model comes from is read in one place: `transformer.live.sources.source_of` (with the registry that owns
# the ``hub:``/``upload:`` keys and the trained-model store that owns ``session:`` names), and, for a link's text,
# `ui/link_values.py`. Everything else asks the source's type and what it supports.
ORIGIN_TESTS = re.compile(r'[!=]= "random"|is_external\(|startswith\(SESSION_PREFIX'
                          r'|\.trained\b(?!\w*\()(?<!job\.trained)|\bconfig\.external\b')
ORIGIN_READERS = {"transformer/live/sources.py", "transformer/external/registry.py",
                  "transformer/training/pretrained.py", "ui/link_values.py"}


def origin_tests(path: Path) -> list[str]:
    """The lines of ``path`` that test a model's origin by its ``weights`` text (or a config's old flags)."""
    root = ENGINE.parent
    name = path.relative_to(root) if path.is_relative_to(root) else path.name
    lines = enumerate(path.read_text().splitlines(), start=1)
    return [f"{name}:{number}: {line.strip()}" for number, line in lines if ORIGIN_TESTS.search(line)]


def test_a_models_origin_is_read_by_its_source_alone():
    files = [*APP, *ENGINE.rglob("*.py")]
    found = [line for path in files if str(path.relative_to(ENGINE.parent)) not in ORIGIN_READERS
             for line in origin_tests(path)]
    assert found == []


def test_the_origin_test_fails_on_a_string_test(tmp_path):
    page = tmp_path / "page.py"
    page.write_text('weights = "copy"\nif weights != "random":\n    pass\nif config.external:\n    pass\n'
                    "job.trained.accuracy\n")
    assert len(origin_tests(page)) == 2
