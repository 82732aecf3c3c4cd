"""The browser tier's fixtures: one `streamlit run` and one headless Chromium for a test process (xdist's worker)'s
browser modules, a fresh tab a test (in the browser's shared context: `browser_support.new_tab`). A module whose
server needs settings of its own (an upload limit, a training queue) overrides `server`; the deploy tests start
their own."""

import pytest
from browser_support import (
    app_server_for_browsers,
    browser_required,
    chromium_missing,
    close_tab,
    headless_chromium,
    new_tab,
)


@pytest.fixture(scope="session")
def server():
    with app_server_for_browsers() as base_url:
        yield base_url


@pytest.fixture(scope="session")
def browser():
    problem = chromium_missing()
    if problem:
        if browser_required():
            pytest.fail(f"browser tests are required here but {problem}")
        pytest.skip(problem)
    with headless_chromium() as browser:
        yield browser


@pytest.fixture()
def page(browser, server):
    page = new_tab(browser)
    page.dialogs = []
    page.on("dialog", lambda dialog: (page.dialogs.append(dialog.message), dialog.dismiss()))
    yield page
    close_tab(page)
