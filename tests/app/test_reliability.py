"""Bad input through the UI and the URL: a clear message, no traceback, and the next valid input works.

Every bad-input case of the app lives in the one table below (CASES).

Also the security settings the app is served with.
"""

import re
import subprocess
import sys
from pathlib import Path

import pytest
from app_support import no_errors, open_page
from chart_support import chart_elements

pytestmark = pytest.mark.app
ROOT = Path(__file__).resolve().parents[2]
LONG_TOKEN = "x" * 10_000
MANY_TOKENS = " ".join(["a"] * 5_000)

# (page, how, control or URL key, bad value, where the message shows, text it contains)
CASES = [
    ("masks", "url", "heads", "3", "warning", "heads=3 does not divide d_model=64"),
    ("masks", "url", "seq_len", "0", "warning", "seq_len='0'"),
    ("masks", "url", "seq_len", "-5", "warning", "seq_len='-5'"),
    ("masks", "url", "seq_len", "seven", "warning", "seq_len='seven'"),
    ("masks", "url", "seq_len", "100000", "warning", "seq_len='100000'"),
    ("masks", "url", "d_model", "63", "warning", "d_model='63'"),
    ("masks", "url", "d_model", "999999", "warning", "d_model='999999'"),
    ("masks", "url", "layers", "1e9", "warning", "layers='1e9'"),
    ("masks", "url", "pad_mask", "maybe", "warning", "pad_mask='maybe'"),
    ("masks", "url", "stack", "<script>", "warning", "stack='<script>'"),
    ("masks", "ui", "src", "", "error", "source text is empty"),
    ("masks", "ui", "tgt", " \n ", "error", "target text is empty"),
    ("masks", "url", "src", "", "error", "source text is empty"),
    ("attention", "ui", "src", "0 0 0\n1 2\n3", "info", "Source line 1 is all padding"),
    ("masks", "ui", "pads", "zzz", "info", "No pad symbol occurs"),
    ("attention", "ui", "pads", "0 1 2 3 4 5 6 7", "info", "is all padding"),
    ("masks", "ui", "pads", "", "error", "at least one pad symbol"),
    ("masks", "ui", "src", "1 2 3 4 5 6 7 8 9\n1\n1 2 3", "info", "Source line 1 has 9 tokens; it was cut to 7"),
    ("masks", "ui", "tgt", "1 2", "info", "The source has 3 lines and the target 1"),
    ("masks", "ui", "src", f"{LONG_TOKEN}\n1\n2", "error", "longer than 200 characters"),
    ("attention", "ui", "src", f"{MANY_TOKENS}\n1\n2", "info", "has 5000 tokens; it was cut to 7"),
    ("attention", "ui", "src", "שלום עולם\n🙂 🙃 😀\nnaïve café ☕", None, None),
    ("attention", "ui", "src", "<img src=x onerror=alert(1)>\n<script>alert(1)</script>\n&amp;", None, None),
    ("masks", "ui", "src", "1 2 3000\n1\n2", "error", "Integer token ids must lie in 0..999"),
    ("attention", "ui", "src", "1 2 9999\n1\n2", "error", "9999"),
    ("attention", "ui", "tgt", "1 2", "info", "The source has 3 lines and the target 1"),
    ("attention", "ui", "src", "x", "info", "The source has 1 line and the target 3"),
    ("attention", "url", "seq_len", "512", "error", None),  # with the heads/layers below: too large
    ("attention", "url", "focus", "9999", "warning", "focus='9999'"),
    ("attention", "url", "focus", "x", "warning", "focus='x'"),
    ("attention", "url", "hidden_heads", "1 x", "warning", "hidden_heads='1 x'"),
    ("attention", "url", "hidden_heads", "99", "warning", "hidden_heads='99'"),
    ("attention", "url", "nv_other", "-3", "warning", "nv_other='-3'"),
    ("attention", "url", "specials", "yes", "warning", "specials='yes'"),
    ("attention", "url", "positions", "xpos", "warning", "positions='xpos'"),
    ("attention", "url", "kv_heads", "3", "warning", "kv_heads=3 does not divide heads=4"),
    ("masks", "url", "mask_family", "dilated", "warning", "mask_family='dilated'"),
    ("attention", "url", "mask_size", "99999", "warning", "mask_size='99999'"),
]


def _set(at, how, key, value):
    if how == "url":
        return
    widget = at.sidebar.text_input(key=key) if key == "pads" else at.sidebar.text_area(key=key)
    widget.set_value(value).run()


def _messages(at, where):
    """What the messages read: their Markdown source with the escapes of text from a link (ui.text.as_text) read."""
    return [re.sub(r"\\(.)", r"\1", element.value) for element in getattr(at, where)]


@pytest.mark.parametrize("page, how, key, value, where, text", CASES)
def test_bad_input_gets_a_message_and_the_app_keeps_working(page, how, key, value, where, text):
    query = {key: value} if how == "url" else {}
    if (key, value) == ("seq_len", "512"):
        query.update(d_model="1024", heads="64", layers="6")
        text = "The attention maps would need"
    at = open_page(page, query)
    _set(at, how, key, value)
    no_errors(at)
    if where is None:
        assert not at.error, _messages(at, "error")
        assert chart_elements(at)
    else:
        assert any(text in message for message in _messages(at, where)), _messages(at, where)
        assert not [e for column in at.main.columns for e in column.error]  # full width, not in a narrow column
    # the next valid input works again
    at.sidebar.text_area(key="src").set_value("1 2 3\n4 5\n6").run()
    at.sidebar.text_area(key="tgt").set_value("1 2\n3\n4 5 6").run()
    at.sidebar.text_input(key="pads").set_value("0").run()
    at.sidebar.select_slider(key="seq_len").set_value(6).run()
    no_errors(at)
    assert not at.error, _messages(at, "error")
    assert chart_elements(at)


def test_security_and_runner_settings_are_in_effect():
    out = subprocess.run([sys.executable, "-m", "streamlit", "config", "show"], cwd=ROOT,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-1000:]
    effective = {
        match.group(1): match.group(2)
        for match in re.finditer(r"^(\w+) = (.+)$", out.stdout, re.MULTILINE)
    }
    assert effective["enableXsrfProtection"] == "true"
    assert effective["enableCORS"] == "true"
    assert effective["address"] == '"127.0.0.1"'
    assert effective["gatherUsageStats"] == "false"
    # static/ is served (for ui.chart's Plotly.js); the repository puts nothing else there
    assert effective["enableStaticServing"] == "true"
    tracked = subprocess.run(["git", "ls-files", "static"], cwd=ROOT, capture_output=True, text=True).stdout.split()
    assert tracked in ([], ["static/.gitignore"]), tracked
    hidden = subprocess.run(  # not listed by `config show`
        [sys.executable, "-c", "from streamlit import config; config.get_config_options(force_reparse=True); "
         "print(config.get_option('runner.postScriptGC'), config.get_option('client.allowedOrigins'), "
         "config.get_option('runner.magicEnabled'))"],
        cwd=ROOT, capture_output=True, text=True, timeout=120)
    # a full gc after each rerun held the GIL ~100 ms (#6); no parent frame's postMessage controls the app (#7); no
    # magic (test_no_script_leaves_a_bare_expression_for_magic_to_write)
    assert hidden.stdout.strip() == "False [] False"
    make_run = (ROOT / "Makefile").read_text()
    assert "--server.address $(HOST)" in make_run and "HOST ?= 127.0.0.1" in make_run


def test_no_script_leaves_a_bare_expression_for_magic_to_write():
    """Magic is off (.streamlit/config.toml): a bare value in a page would show nothing, so none may be there. A
    statement that is only an expression is a call, or a docstring."""
    import ast

    for path in [ROOT / "app.py", *sorted((ROOT / "app_pages").glob("*.py"))]:
        for node in ast.walk(ast.parse(path.read_text())):
            body = getattr(node, "body", None)
            if not isinstance(body, list):
                continue
            for index, statement in enumerate(body):
                if not isinstance(statement, ast.Expr):
                    continue
                value = statement.value
                docstring = index == 0 and isinstance(value, ast.Constant) and isinstance(value.value, str) and \
                    isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                assert isinstance(value, (ast.Call, ast.Await)) or docstring, \
                    f"{path.name}:{statement.lineno}: {ast.unparse(statement)}"


def test_no_raw_html_or_pickles_anywhere_in_the_app():
    sources = [p for folder in ("app_pages", "ui", "viz", "transformer") for p in (ROOT / folder).rglob("*.py")]
    sources.append(ROOT / "app.py")
    for path in sources:
        text = path.read_text()
        assert "unsafe_allow_html" not in text, path
        assert "st.html(" not in text, path
        assert "import pickle" not in text and "allow_pickle=True" not in text, path
        assert "pickle.load" not in text and "torch.load" not in text, path
