"""The browser tier's fixtures: one `streamlit run` and one headless Chromium for a test process's run of browser
modules, one after the other, a fresh tab a test (in the browser's shared context: `browser_support.new_tab`). They
stop when the process's next test is not a browser test, so a process running unit tests holds no idle server. A
module whose server needs settings of its own (an upload limit, a training queue) overrides `server`; the deploy
tests start their own."""

import contextlib

import pytest
from browser_support import (
    app_server_for_browsers,
    close_tab,
    headless_chromium,
    new_tab,
    require_chromium,
)

_SHARED = contextlib.ExitStack()  # the shared server and browser, while the process runs browser modules
_STARTED = {}
_NEXT_ITEM = [None]


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item, nextitem):
    _NEXT_ITEM[0] = nextitem


def pytest_sessionfinish(session, exitstatus):
    """Whatever is still open stops here, before the process's Playwright does (at exit): a browser left to the
    garbage collector after it printed an ignored exception."""
    _STARTED.clear()
    _SHARED.close()


def _shared(name: str, start):
    if name not in _STARTED:
        _STARTED[name] = _SHARED.enter_context(start())
    return _STARTED[name]


def _stop_unless_a_browser_test_is_next() -> None:
    following = _NEXT_ITEM[0]
    if following is None or following.path.parent.name != "browser":
        _STARTED.clear()
        _SHARED.close()


@pytest.fixture(scope="module")
def server():
    yield _shared("server", app_server_for_browsers)
    _stop_unless_a_browser_test_is_next()


def _chromium():
    require_chromium()
    return headless_chromium()


@pytest.fixture(scope="module")
def browser():
    yield _shared("browser", _chromium)
    _stop_unless_a_browser_test_is_next()


@pytest.fixture()
def page(browser, server):
    page = new_tab(browser)
    page.dialogs = []
    page.on("dialog", lambda dialog: (page.dialogs.append(dialog.message), dialog.dismiss()))
    yield page
    close_tab(page)
