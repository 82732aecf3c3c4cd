"""The browser tier's fixtures: one `streamlit run` and one headless Chromium a module, a fresh tab a test (in the
browser's shared context: `browser_support.new_tab`)."""

import pytest
from browser_support import app_server_for_browsers, close_tab, headless_chromium, new_tab


@pytest.fixture(scope="module")
def server():
    with app_server_for_browsers() as base_url:
        yield base_url


@pytest.fixture(scope="module")
def browser(server):
    with headless_chromium() as browser:
        yield browser


@pytest.fixture()
def page(browser):
    page = new_tab(browser)
    page.dialogs = []
    page.on("dialog", lambda dialog: (page.dialogs.append(dialog.message), dialog.dismiss()))
    yield page
    close_tab(page)
