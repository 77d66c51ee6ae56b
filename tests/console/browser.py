"""A real browser for the console tests: Debian's headless Chromium driven by Selenium.

Nothing is downloaded at run time: the browser is ``/usr/bin/chromium`` and the driver the
system's ``/usr/bin/chromedriver`` (packages ``chromium`` and ``chromium-driver``, installed by
``.ci/run``), given to Selenium explicitly, with ``SE_OFFLINE`` set so Selenium Manager never
reaches out. Each browser gets a fresh profile directory and no background networking.

Screenshots go to ``var/console-screenshots/`` (printed by the tests) and, when
``SLUICEGATE_CONSOLE_SCREENSHOTS_DOCS=1`` (``make console-screenshots``), to ``docs/console/``.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage", "--hide-scrollbars", "--window-size=1440,1000")
ROOT = Path(__file__).resolve().parents[2]
SCREENSHOTS = ROOT / "var" / "console-screenshots"
DOCS_SCREENSHOTS = ROOT / "docs" / "console"


def require_browser() -> None:
    missing = [str(p) for p in (CHROMIUM, CHROMEDRIVER) if not p.exists()]
    if missing:
        pytest.fail(f"{', '.join(missing)} missing: apt-get install -y chromium chromium-driver (.ci/run does)")


class Browser:
    """One Chromium session; ``close`` removes its profile."""

    def __init__(self, base_url: str) -> None:
        os.environ["SE_OFFLINE"] = "true"  # Selenium Manager: never download a browser or a driver
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service

        self.base_url = base_url.rstrip("/")
        self.profile = tempfile.mkdtemp(prefix="sg-console-chromium-")
        options = webdriver.ChromeOptions()
        options.binary_location = str(CHROMIUM)
        for flag in (*FLAGS, f"--user-data-dir={self.profile}"):
            options.add_argument(flag)
        self.driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
        self.driver.set_page_load_timeout(60)

    def open(self, path: str) -> None:
        self.driver.get(self.base_url + path)

    def css(self, selector: str):
        from selenium.webdriver.common.by import By

        return self.driver.find_elements(By.CSS_SELECTOR, selector)

    def one(self, selector: str):
        found = self.css(selector)
        assert len(found) == 1, f"{selector!r}: {len(found)} elements on {self.driver.current_url}"
        return found[0]

    def text(self, selector: str) -> str:
        return self.one(selector).text

    @property
    def path(self) -> str:
        return self.driver.current_url.removeprefix(self.base_url)

    def click(self, selector: str) -> None:
        """Click and wait until the page it leads to has loaded (a form post, a link)."""
        self.navigates(lambda: self.one(selector).click())

    def navigates(self, act) -> None:
        """Run ``act`` and wait for the next document to finish loading.

        The old document is marked with a JavaScript property; a new document does not carry it.
        (Selenium's ``staleness_of`` asks the old element, which Chromium 156 answers with an
        inspector error instead of a stale-element error while the page is being replaced.)
        """
        from selenium.common.exceptions import WebDriverException
        from selenium.webdriver.support.ui import WebDriverWait

        self.driver.execute_script("window.__sgOldDocument = true;")
        act()

        def loaded(driver) -> bool:
            return bool(driver.execute_script(
                "return window.__sgOldDocument !== true && document.readyState === 'complete';"))

        WebDriverWait(self.driver, 30, ignored_exceptions=(WebDriverException,)).until(loaded)

    def sign_in(self, token: str) -> None:
        self.driver.delete_all_cookies()
        self.open("/console/sign-in")
        self.one("#token").send_keys(token)
        self.click("#signin")

    def submit_form(self, action: str, fields: dict[str, str]) -> None:
        """POST a form this page does not offer (what a hand-made request from this browser sends)."""
        self.navigates(lambda: self.driver.execute_script(
            "const f = document.createElement('form'); f.method = 'post'; f.action = arguments[0];"
            "for (const [k, v] of Object.entries(arguments[1])) {"
            "  const i = document.createElement('input'); i.type = 'hidden'; i.name = k; i.value = v; f.appendChild(i); }"
            "document.body.appendChild(f); f.submit();", action, fields))

    def screenshot(self, name: str) -> Path:
        """The whole page as ``<name>.png`` under :data:`SCREENSHOTS` (and docs/console/ when asked)."""
        height = self.driver.execute_script("return document.documentElement.scrollHeight")
        self.driver.set_window_size(1440, max(700, min(int(height) + 40, 6000)))
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        path = SCREENSHOTS / f"{name}.png"
        self.driver.save_screenshot(str(path))
        self.driver.set_window_size(1440, 1000)
        if os.environ.get("SLUICEGATE_CONSOLE_SCREENSHOTS_DOCS") == "1":
            DOCS_SCREENSHOTS.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, DOCS_SCREENSHOTS / path.name)
        return path

    def close(self) -> None:
        try:
            self.driver.quit()
        finally:
            shutil.rmtree(self.profile, ignore_errors=True)
