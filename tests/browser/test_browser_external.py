"""Your model in Chromium: a .keras file uploaded in the sidebar opens on the Attention page and its link names
its hash; a corrupt file and one over the size limit get a message and the app keeps running."""

import os

import pytest
from browser_pages import open_page, wait_for_charts
from browser_support import app_server_for_browsers, wait_idle
from chart_support import PLOT

pytestmark = pytest.mark.browser
LIMIT_MB = "0.05"  # this module's server refuses files over 50 KB


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """The app as `make run` starts it, with a 50 KB upload limit and an upload folder of its own."""
    settings = {"ATTENTION_LAB_UPLOAD_MB": LIMIT_MB, "ATTENTION_LAB_UPLOAD_DIR": str(tmp_path_factory.mktemp("up"))}
    with app_server_for_browsers(settings) as base_url:
        yield base_url


def _small_keras_file(folder) -> str:
    import keras  # noqa: PLC0415

    keras.utils.set_random_seed(0)
    ids = keras.Input((None,), dtype="int32")
    x = keras.layers.Embedding(20, 8)(ids)
    model = keras.Model(ids, keras.layers.MultiHeadAttention(num_heads=2, key_dim=4)(x, x))
    path = folder / "small.keras"
    model.save(path)
    assert path.stat().st_size < 50 * 1024
    return str(path)


def _upload(page, path: str) -> None:
    page.get_by_test_id("stSidebar").get_by_text("Your model").click()
    page.get_by_test_id("stSidebar").locator("input[type=file]").set_input_files(path)
    wait_idle(page)


def test_an_uploaded_keras_file_opens_on_the_attention_page_and_the_link_names_its_hash(page, server, tmp_path):
    open_page(page, server, "attention")
    _upload(page, _small_keras_file(tmp_path))
    page.wait_for_function("() => location.search.includes('weights=upload%3A')"
                           " || location.search.includes('weights=upload:')", timeout=60_000)
    wait_idle(page)
    wait_for_charts(page)  # no tokenizer: its example lines are token ids
    assert page.get_by_test_id("stSidebar").get_by_role("textbox", name="Sentences").input_value().split()[0].isdigit()
    assert page.get_by_text("Your model:").count() >= 1
    assert page.locator(PLOT).count() >= 1 and page.get_by_test_id("stException").count() == 0


@pytest.mark.parametrize("content, says", [(b"\x00" * 2000, "is not a .keras file"),
                                           (b"PK\x03\x04" + os.urandom(100 * 1024), "the limit is 0 MB")])
def test_a_corrupt_or_oversize_file_gets_a_message_and_the_app_keeps_running(page, server, tmp_path, content, says):
    path = tmp_path / "bad.keras"
    path.write_bytes(content)
    open_page(page, server, "attention")
    _upload(page, str(path))
    page.get_by_text(says).first.wait_for(timeout=60_000)
    assert "upload" not in page.url and page.get_by_test_id("stException").count() == 0
    wait_for_charts(page)
