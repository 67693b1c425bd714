"""Headless Chromium for the report tests, driven by selenium. Missing browser = failure, not skip."""

from __future__ import annotations

import os
import shutil

import pytest

SETUP_HINT = "run `make setup-browser` (apt-get install -y chromium chromium-driver) and `make setup-dev`"


def _find(*names: str) -> str | None:
    return next((path for path in map(shutil.which, names) if path), None)


def chromium_driver():
    """A headless Chromium session that records the page's console messages."""
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        pytest.fail(f"selenium is not installed: {SETUP_HINT}", pytrace=False)
    browser = os.environ.get("GPUFLEET_CHROMIUM") or _find("chromium", "chromium-browser", "google-chrome")
    driver_dir = os.environ.get("CHROMEWEBDRIVER")  # where hosted CI images keep theirs
    driver = os.environ.get("GPUFLEET_CHROMEDRIVER") or _find("chromedriver") or (
        shutil.which("chromedriver", path=driver_dir) if driver_dir else None)
    if browser is None or driver is None:
        pytest.fail(f"headless Chromium is needed for the report tests and was not found: {SETUP_HINT}",
                    pytrace=False)
    os.environ.setdefault("SE_OFFLINE", "true")  # never let selenium fetch a driver or browser of its own
    options = webdriver.ChromeOptions()
    options.binary_location = browser
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1280,1600", "--disable-extensions", "--no-first-run"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(options=options, service=Service(driver))


def console_errors(driver) -> list[dict]:
    return [entry for entry in driver.get_log("browser") if entry.get("level") == "SEVERE"]
