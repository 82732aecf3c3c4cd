"""Attention over images, in Chromium: the Images page draws the match model's image, every head over it, rollout
and flow, distances and positions; a click on a pixel flips it (the link keeps it) and a click on a head's patch
looks from that patch; a match model trained on the Train page opens here."""

import pytest
from browser_pages import CHART_TEXT_PROBLEMS, app_tab, press_train_task, text_collisions, wait_for_charts
from browser_support import OUTPUT, wait_idle
from chart_support import PLOT, click_chart

pytestmark = pytest.mark.browser


@pytest.mark.parametrize("width", [1400, 390])
def test_the_images_page_draws_every_head_over_the_image_and_a_click_flips_a_pixel(browser, server, width):
    with app_tab(browser, server, "images", width) as tab:
        tab.wait_for_function(f"() => document.querySelectorAll('{PLOT}').length >= 5", timeout=60_000)
        wait_idle(tab)
        panels = tab.evaluate(f"""() => document.querySelectorAll('{PLOT}')[1].layout.annotations.length""")
        assert panels == 8  # two layers of four heads
        tab.screenshot(path=str(OUTPUT / f"images-match-{width}.png"), full_page=True)
        problems = text_collisions(tab) + tab.evaluate(CHART_TEXT_PROBLEMS)
        assert not problems, problems
        click_chart(tab, 0, 5, 2)  # row 2, column 5: pixel 21
        tab.wait_for_url("**img_flip=21**", timeout=30_000)
        wait_idle(tab)
        tab.get_by_text("1 pixels flipped").first.wait_for(timeout=30_000)  # the image's title says so
        click_chart(tab, 1, 3, 0)  # the first head's panel: patch 3 (top row, last column)
        tab.wait_for_url("**img_from=4**", timeout=30_000)


@pytest.mark.slow
def test_an_image_task_trained_on_the_train_page_opens_on_the_images_page(page, server):
    press_train_task(page, server, "match", 30)
    page.get_by_text("Accuracy on 1,000 fresh images").wait_for(timeout=180_000)
    page.get_by_role("button", name="Explore this model's attention").click()
    page.wait_for_url("**/images?**img_model=image%3A*", timeout=60_000)
    wait_idle(page)
    wait_for_charts(page)
    chosen = page.get_by_test_id("stRadio").filter(has_text="Model").locator("input:checked")
    assert chosen.evaluate("input => input.closest('label').innerText").startswith("Trained here: match, d_model 64")
    assert page.get_by_text("right answer: patch").count() >= 1
