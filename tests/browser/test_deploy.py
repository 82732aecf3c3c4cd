"""deploy/: two app replicas behind Debian's nginx with the project's own configuration, on loopback.

Sessions spread over both replicas, each stays on its replica through reruns, and when one replica
stops mid-run its sessions reconnect to the other and come back to the view in their URL.
"""

import re
import shutil
import tempfile
import time
import urllib.request
from dataclasses import asdict
from pathlib import Path

import pytest
from browser_support import (
    free_port,
    streamlit_server,
    wait_idle,
)
from chart_support import FIRST_PLOT, PLOT
from deploy_support import MAX_SESSIONS, nginx, nginx_browser, routes, write

pytestmark = [pytest.mark.browser, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]
SESSIONS = 6  # at least; more (up to MAX_SESSIONS) until both replicas have one


def _cookie(page, name: str) -> str:
    return next(cookie["value"] for cookie in page.context.cookies() if cookie["name"] == name)


def chart_rows(page) -> int:
    return page.evaluate(f"() => {FIRST_PLOT}?._fullData?.[0]?.z?.length || 0")


@pytest.fixture()
def nginx_dir():
    """nginx's folder, under /tmp: its workers (nobody) write request bodies there, and pytest's folders are closed
    to other users (an upload was answered 500)."""
    folder = Path(tempfile.mkdtemp(prefix="attention-lab-nginx-"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture()
def browser():
    with nginx_browser() as browser:
        yield browser


def test_two_replicas_behind_nginx_keep_sessions_sticky_and_take_over_a_stopped_one(browser, nginx_dir):
    with (streamlit_server(with_process=True) as (first_url, first), streamlit_server() as second_url):
        replicas = [first_url.split("//")[1], second_url.split("//")[1]]
        port = free_port()
        with nginx(write(f"127.0.0.1:{port}", replicas, nginx_dir), nginx_dir, port):
            proxy = f"http://127.0.0.1:{port}"
            pages = []
            # Each session is its own browser context (its own cookies, its own random route). Six sessions all
            # land on one replica about once in 32 runs, so more open until both replicas have one.
            while len(pages) < SESSIONS or (len(pages) < MAX_SESSIONS and
                                            len({seen[0] for seen in routes(nginx_dir).values()}) < 2):
                page = browser.new_context(viewport={"width": 1300, "height": 900}).new_page()
                page.goto(f"{proxy}/masks?seq_len={5 + len(pages)}")
                wait_idle(page)
                page.wait_for_selector(PLOT, timeout=120_000)
                pages.append(page)
            assert [chart_rows(page) for page in pages] == [5 + index for index in range(len(pages))]
            opened = routes(nginx_dir)
            assert len(opened) == len(pages) and all(len(set(seen)) == 1 for seen in opened.values()), opened
            assert {seen[0] for seen in opened.values()} == set(replicas), opened  # spread over both
            with urllib.request.urlopen(f"{proxy}/_stcore/health", timeout=10) as health:  # through the proxy
                assert health.status == 200 and health.read() == b"ok"
            names = {cookie["name"] for cookie in pages[0].context.cookies()}
            assert {"al_route", "_streamlit_xsrf"} <= names, names  # the route and Streamlit's XSRF token
            for page in pages:  # a rerun each: a slider move, on the session's own replica
                thumb = page.get_by_test_id("stSlider").filter(has_text="Sequence length").get_by_role("slider")
                thumb.focus()
                thumb.press("ArrowRight")
            for index, page in enumerate(pages):
                page.wait_for_function(f"() => ({FIRST_PLOT}?._fullData?.[0]?.z?.length || 0) === {6 + index}",
                                       timeout=60_000)
            assert all(len(set(seen)) == 1 for seen in routes(nginx_dir).values())  # reruns stayed on their replica
            route_of = {page: _cookie(page, "al_route") for page in pages}
            on_first = [page for page in pages if opened[route_of[page]][0] == replicas[0]]
            first.terminate()  # one replica stops mid-run
            first.wait(30)
            deadline = time.monotonic() + 120
            for page in on_first:  # reconnected through nginx to the other replica, back at the link's view
                found = re.search(r"seq_len=(\d+)", page.url)
                length = int(found.group(1)) if found else 7  # the default is left out of a link
                page.wait_for_function(f"() => ({FIRST_PLOT}?._fullData?.[0]?.z?.length || 0) === {length}",
                                       timeout=max(1, deadline - time.monotonic()) * 1000)
                wait_idle(page)
                assert page.locator("[data-testid='stException']").count() == 0
            after = routes(nginx_dir)
            moved = [after[route_of[page]][-1] for page in on_first]
            assert on_first and moved == [replicas[1]] * len(on_first), after


def _kept_model(data_dir: Path, monkeypatch) -> str:
    """A small model trained here and kept in ``data_dir`` (as a replica keeps what a student trains); its name."""
    from transformer.training import kept_on_disk
    from transformer.training.pretrained import session_name
    from transformer.training.saved_model import TrainSpec, save
    from transformer.training.train import train

    monkeypatch.setenv("ATTENTION_LAB_DATA_DIR", str(data_dir))
    spec = TrainSpec(task="copy", d_model=16, num_heads=2, d_ff=32, num_layers=1, steps=3, batch=8, max_len=5)
    result = train(spec, log_every=3)
    kept_on_disk.keep(lambda folder: save(result, folder), "shared0001", "copy, trained on replica A",
                      {"spec": asdict(spec)})
    return session_name("shared0001")


def _opens_the_model(page, url: str) -> None:
    page.goto(url)
    wait_idle(page)
    page.wait_for_selector(PLOT, timeout=120_000)
    text = page.inner_text("body")
    assert "No model trained on this server" not in text and "was dropped" not in text, text[:500]
    sidebar = page.get_by_test_id("stSidebar").inner_text()
    assert "Locked by the trained model" in sidebar and "weights=session" in page.url, sidebar[:800]


def test_replicas_share_one_data_directory_for_kept_and_trained_models_and_name_a_damaged_one(
        browser, tmp_path, nginx_dir, monkeypatch):
    """#55: the replicas share one data directory (deploy/compose.yaml mounts one volume on both). A model kept there
    opens through nginx on either replica; a student trains on replica A and explores the model, and the link opens
    on replica B, whose Train page draws the model's attention over training; a replica started again still opens
    the kept model, and with the trained one's weights truncated on disk it names that one. (One pair of replicas
    and one restart for all of it: three fewer server starts than a test each.)"""
    from browser_pages import explore, press_train

    shared = tmp_path / "data"
    kept = _kept_model(shared, monkeypatch)
    kept_link = f"attention?weights={kept}&src=a+b+c&tgt=a+b+c&seq_len=5"
    env = {"ATTENTION_LAB_DATA_DIR": str(shared)}
    with streamlit_server(env=env) as first_url, streamlit_server(env=env) as second_url:
        replicas = [first_url.split("//")[1], second_url.split("//")[1]]
        port = free_port()
        with nginx(write(f"127.0.0.1:{port}", replicas, nginx_dir), nginx_dir, port):
            pages = []
            while len(pages) < 2 or (len(pages) < MAX_SESSIONS and
                                     len({seen[0] for seen in routes(nginx_dir).values()}) < 2):
                page = browser.new_context(viewport={"width": 1300, "height": 900}).new_page()
                _opens_the_model(page, f"http://127.0.0.1:{port}/{kept_link}")
                pages.append(page)
            assert {seen[0] for seen in routes(nginx_dir).values()} == set(replicas)  # both replicas opened it
        page = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
        press_train(page, first_url, 20)
        link = explore(page)
        _opens_the_model(browser.new_context().new_page(), link.replace(first_url, second_url))
        name = re.search(r"weights=(session(?::|%3A)[0-9a-f]+)", link).group(1)
        timeline = browser.new_context(viewport={"width": 1400, "height": 4000}).new_page()  # every chart in view
        timeline.goto(f"{second_url}/train?weights={name}")  # its attention over training, kept with it
        wait_idle(timeline)
        timeline.get_by_text("Attention over training of").wait_for(timeout=60_000)
        timeline.wait_for_function(f"() => document.querySelectorAll('{PLOT}').length >= 2", timeout=60_000)
    kept_folder = next(folder for folder in (shared / "models").iterdir() if "shared0001" in folder.name)
    weights = next(path for path in (shared / "models").glob("*/weights.weights.h5") if path.parent != kept_folder)
    weights.write_bytes(weights.read_bytes()[:100])
    with streamlit_server(env=env) as restarted:  # a replica started again: nothing in memory
        _opens_the_model(browser.new_context().new_page(), f"{restarted}/{kept_link}")
        page = browser.new_context().new_page()
        page.goto(link.replace(first_url, restarted))
        wait_idle(page)
        page.get_by_text("kept on this server is damaged").first.wait_for(timeout=60_000)
        assert "set aside" in page.inner_text("body") and not page.locator("[data-testid='stException']").count()


def test_a_model_over_a_megabyte_uploads_through_nginx(browser, tmp_path, nginx_dir):
    import keras  # noqa: PLC0415  (the engine's test process has it; the deploy module needs it here alone)

    keras.utils.set_random_seed(0)
    ids = keras.Input((None,), dtype="int32")
    x = keras.layers.Embedding(24000, 16)(ids)  # ~1.5 MB of weights: past nginx's own 1 MB default
    keras.Model(ids, keras.layers.MultiHeadAttention(num_heads=2, key_dim=8)(x, x)).save(tmp_path / "big.keras")
    assert (tmp_path / "big.keras").stat().st_size > 1.2 * 2**20
    runtime = nginx_dir
    with streamlit_server() as app_url:
        port = free_port()
        with nginx(write(f"127.0.0.1:{port}", [app_url.split("//")[1]], runtime), runtime, port):
            page = browser.new_context(viewport={"width": 1300, "height": 900}).new_page()
            page.goto(f"http://127.0.0.1:{port}/attention")
            wait_idle(page)
            page.get_by_test_id("stSidebar").get_by_text("Your model").click()
            page.get_by_test_id("stSidebar").locator("input[type=file]").set_input_files(str(tmp_path / "big.keras"))
            page.wait_for_function("() => location.search.includes('weights=upload')", timeout=120_000)
            wait_idle(page)
            assert page.get_by_text("Your model:").count() >= 1
            statuses = [line.split('" ')[1].split()[0] for line in (runtime / "access.log").read_text()
                        .splitlines() if "upload_file" in line]
            assert statuses and set(statuses) == {"204"}, statuses  # not nginx's 413, nor a body it cannot keep
