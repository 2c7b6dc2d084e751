"""Headless Chromium for the inspector's browser tests and screenshots (Selenium, no downloads).

Uses Debian's ``chromium`` and ``chromium-driver`` packages (``apt-get install chromium
chromium-driver``) and the ``selenium`` package (``pip install -e ".[ui-test]"``). The driver
path is given explicitly, so Selenium Manager never fetches a browser or a driver, and the
browser runs with networking extras off and a fresh profile directory.

Example:
    >>> paths = chromium_paths()  # (browser, driver) or None when either is missing
    >>> paths is None or all(paths)
    True
"""

from __future__ import annotations

import shutil
import tempfile
from typing import Any

from langmem_cog.errors import ModelNotFoundError

__all__ = ["CHROMIUM_FLAGS", "chromium_paths", "headless_chromium"]

#: Flags every run uses: headless, no sandbox (containers run as root), nothing fetched in the background.
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-quic",
    "--no-first-run",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--disable-extensions",
    "--hide-scrollbars",
)


def chromium_paths() -> tuple[str, str] | None:
    """``(chromium, chromedriver)`` executables found on ``PATH``, or ``None`` if either is missing."""
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    return (browser, driver) if browser and driver else None


def headless_chromium(width: int = 1400, height: int = 1000, user_data_dir: str | None = None) -> Any:
    """Start a headless Chromium under Selenium with a fresh profile; ``quit()`` it when done.

    Args:
        width: Window width in pixels.
        height: Window height in pixels.
        user_data_dir: An empty profile directory (default: a new temporary directory).

    Raises:
        ModelNotFoundError: If chromium, chromedriver or selenium is missing (the message says
            what to install).
    """
    paths = chromium_paths()
    if paths is None:
        raise ModelNotFoundError("chromium and chromedriver are needed: apt-get install chromium chromium-driver")
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError as exc:
        raise ModelNotFoundError('selenium is needed: pip install -e ".[ui-test]"') from exc
    opts = webdriver.ChromeOptions()
    opts.binary_location = paths[0]
    for flag in (*CHROMIUM_FLAGS, f"--window-size={width},{height}",
                 f"--user-data-dir={user_data_dir or tempfile.mkdtemp(prefix='langmem-chromium-')}"):
        opts.add_argument(flag)
    return webdriver.Chrome(options=opts, service=Service(executable_path=paths[1]))
