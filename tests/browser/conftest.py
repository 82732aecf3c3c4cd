"""The browser tier's fixtures: one `streamlit run` and one headless Chromium a module, a fresh page a test."""

import pytest
from browser_support import app_server_for_browsers, headless_chromium


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
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    page.dialogs = []
    page.on("dialog", lambda dialog: (page.dialogs.append(dialog.message), dialog.dismiss()))
    yield page
    context.close()
