"""Fixtures shared by the tool tests: one headless Chromium per test module, the page corpus."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.helpers.chromium import Chromium, PageServer


@pytest.fixture(scope="module")
def browser() -> Iterator[Chromium]:
    """One browser per module (2 cores: never one per test)."""
    with Chromium.launched() as b:
        yield b


@pytest.fixture(scope="module")
def pages() -> Iterator[PageServer]:
    """``tests/helpers/pages/`` served from 127.0.0.1."""
    with PageServer() as srv:
        yield srv
