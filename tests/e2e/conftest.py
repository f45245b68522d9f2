"""Fixtures of the end-to-end tests: one Playwright driver per module, skipped without Chromium.

Each module launches its browsers through :func:`tests.e2e.browser.launched`, one at a time.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Playwright, sync_playwright

from tests.e2e.browser import CHROMIUM_PATH, chromium_available


@pytest.fixture(scope="module")
def playwright() -> Iterator[Playwright]:
    if not chromium_available():
        pytest.skip(f"{CHROMIUM_PATH} is not installed")
    with sync_playwright() as p:
        yield p
