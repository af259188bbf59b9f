"""The documentation site in a real browser: MkDocs builds it as `make docs` does (--strict), a local HTTP
server serves the build on 127.0.0.1, and Debian's Chromium (through Playwright) opens the home page and the
quickstart tutorial's page. Each has its title and the site's navigation; the home page's picture loads; the
tutorial's code cells are rendered. Screenshots go to runs/test-screenshots/ (or $WORKBENCH_SCREENSHOT_DIR)."""

import functools
import http.server
import os
import subprocess
import sys
import threading

import pytest

from support import REPO, SCREENSHOTS, launch_chromium, module_available, requires_browser, requires_component

pytestmark = pytest.mark.browser
GUIDE_PAGES = ("The API, layer by layer", "Atari", "MuJoCo", "Scaling out on Ray", "Learning results")


@pytest.fixture
def site(tmp_path):
    """The site built from this checkout into tmp_path, served on 127.0.0.1; yields its URL."""
    requires_component(module_available("mkdocs"), "mkdocs (pip install -e '.[docs]')")
    build = tmp_path / "site"
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "--site-dir", str(build)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    handler = functools.partial(QuietHandler, directory=str(build))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 - the base class's signature
        pass


def navigation_titles(page):
    return page.locator("nav.md-nav--primary .md-nav__link").all_inner_texts()


def test_the_site_renders_its_home_page_and_a_tutorial_in_chromium(site):
    requires_browser()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = launch_chromium(playwright)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(f"{site}/", wait_until="load")
            assert page.title() == "Deep-neuroevolution workbench"
            titles = {title.strip() for title in navigation_titles(page)}
            assert set(GUIDE_PAGES) <= titles, titles
            picture = page.locator("article img").first
            assert picture.evaluate("image => image.complete && image.naturalWidth") > 0, "the home page's picture"
            page.screenshot(path=os.path.join(SCREENSHOTS, "site-home.png"))

            page.goto(f"{site}/tutorials/00_quickstart/", wait_until="load")
            assert page.title().startswith("0. Quickstart"), page.title()
            assert set(GUIDE_PAGES) <= {title.strip() for title in navigation_titles(page)}
            assert page.locator(".jp-CodeCell").count() >= 5
            assert "Quickstart" in page.locator("article h1").first.inner_text()
            page.screenshot(path=os.path.join(SCREENSHOTS, "site-tutorial.png"))
        finally:
            browser.close()
