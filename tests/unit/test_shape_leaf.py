"""The model's shape is spelled once (issue 79, step 1): `transformer/core/shape.py` imports nothing of the engine,
holds every enumeration, rule and limit a shape keeps, and no other module writes a shape's default or limit again.
Each check also runs on a planted violation, so that it is seen to fail."""

import ast
import io
import re
import tokenize
from pathlib import Path

import pytest

from transformer.core.shape import ModelShape
from ui import state

ROOT = Path(__file__).resolve().parents[2]
SHAPE = ROOT / "transformer" / "core" / "shape.py"
CODE_DIRS = ("transformer", "ui", "viz", "app_pages")
RULES = ("check_heads", "check_kv_heads", "check_norm", "check_architecture", "check_range", "head_counts",
         "kv_head_counts")
NAMES = ("STACKS", "ARCHITECTURES", "ARCHITECTURE_STACKS", "NORMS", "POSITIONS", "MAX_HEADS", "MAX_LAYERS",
         "MAX_D_MODEL", "MAX_D_FF", "PAPER")
# A shape's size written as a number: a keyword, a dict entry or a field default
SIZE_LITERAL = re.compile(r"\b(d_model|num_heads|heads|d_ff|num_layers|layers|num_kv_heads|kv_heads)\s*[=:]\s*\d")
# Where a task's own training values live (each a TrainSpec or VisionSpec value): the only other home of sizes
TASK_TABLES = ("transformer/training/saved_model.py", "transformer/training/vision.py")


def engine_imports(source: str) -> list[str]:
    """The modules ``source`` imports that are not Python's own."""
    found = []
    for node in ast.walk(ast.parse(source)):
        names = [alias.name for alias in node.names] if isinstance(node, ast.Import) else \
            [node.module or ""] if isinstance(node, ast.ImportFrom) else []
        found += [name for name in names if name.split(".")[0] not in ("__future__", "dataclasses", "typing")]
    return found


def definitions(source: str) -> set[str]:
    """The rules and enumerations of `RULES` and `NAMES` that ``source`` defines at its top level."""
    defined = set()
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef) and node.name in RULES:
            defined.add(node.name)
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) \
            else []
        defined |= {target.id for target in targets if isinstance(target, ast.Name) and target.id in NAMES}
    return defined


def size_literals(source: str) -> list[str]:
    """The lines of ``source``'s code (comments and strings left out) that write a shape's size as a number."""
    kept, row = [], None
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type in (tokenize.COMMENT, tokenize.STRING):
            continue
        if token.start[0] != row:
            kept.append("")
            row = token.start[0]
        kept[-1] += token.string + " "
    return [line.strip() for line in kept if SIZE_LITERAL.search(line.replace(" = ", "=").replace(" : ", ":"))]


def code_files():
    for folder in CODE_DIRS:
        yield from sorted((ROOT / folder).rglob("*.py"))


def test_the_spec_imports_nothing_of_the_engine():
    assert engine_imports(SHAPE.read_text()) == []
    assert engine_imports("from transformer.core.attention import check_heads\n") == ["transformer.core.attention"]


def test_every_rule_and_enumeration_of_a_shape_is_defined_in_the_spec_alone():
    assert definitions(SHAPE.read_text()) == set(RULES) | set(NAMES)
    elsewhere = {path.relative_to(ROOT).as_posix(): definitions(path.read_text()) for path in code_files()
                 if path != SHAPE}
    assert {path: names for path, names in elsewhere.items() if names} == {}
    assert definitions("MAX_HEADS = 64\n\ndef check_norm(norm):\n    pass\n") == {"MAX_HEADS", "check_norm"}


def test_no_module_writes_a_shapes_size_again():
    """Sizes live in the spec (defaults, limits, the paper's) and the tasks' training tables, nowhere else."""
    found = {path.relative_to(ROOT).as_posix(): size_literals(path.read_text()) for path in code_files()
             if path != SHAPE and path.relative_to(ROOT).as_posix() not in TASK_TABLES}
    assert {path: lines for path, lines in found.items() if lines} == {}
    assert size_literals('SYMBOL_DEFAULTS = dict(d_model=32, heads=2)  # d_model=64\n"d_model: 64"\n') == \
        ["SYMBOL_DEFAULTS = dict ( d_model = 32 , heads = 2 )"]


@pytest.mark.parametrize("field, name", state.SHAPE_FIELDS.items())
def test_the_uis_shape_fields_take_the_specs_defaults_through_one_table(field, name):
    default = getattr(ModelShape(), name)
    assert state.FIELDS[field].default == (0 if name == "num_kv_heads" and default is None else default)


def test_the_table_of_short_names_covers_the_whole_spec():
    from dataclasses import fields

    assert set(state.SHAPE_FIELDS.values()) == {field.name for field in fields(ModelShape)}
