"""Which documents the page tools drive (``actors.tools.page_types._check_url``)."""

from __future__ import annotations

import pytest

from actors.tools.cdp import CdpError, ErrorCode
from actors.tools.page_types import _check_url


@pytest.mark.parametrize("url", ["", "about:blank", "https://example.com/", "http://127.0.0.1:8/"])
def test_web_pages_and_a_tab_that_has_shown_nothing_yet_are_driven(url: str) -> None:
    # "": a new tab's frame before its first document commits (the extension allows it too).
    _check_url(url, allow_file=False)


@pytest.mark.parametrize(
    "url", ["chrome://settings/", "chrome-error://chromewebdata/", "devtools://x", "file:///etc"]
)
def test_browser_pages_are_refused_by_name(url: str) -> None:
    with pytest.raises(CdpError) as err:
        _check_url(url, allow_file=False)
    assert err.value.code is ErrorCode.NOT_ALLOWED_URL and url[:20] in err.value.message


def test_files_only_when_allowed() -> None:
    _check_url("file:///tmp/a.html", allow_file=True)
