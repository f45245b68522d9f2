"""HTTP from the host: ``download_file``, ``replay_request`` and the host tool ``web_fetch``.

- ``download_file`` fetches a URL with the browser's cookies for it (``Network.getCookies``) and
  saves the body in the files sandbox, size-capped. Redirects are followed by hand (at most 5), each
  hop checked (``http:``/``https:`` only, protocol.md section 5 "URLs") and sent with the cookies
  of *its* URL, so cookies never leak to another site.
- ``replay_request`` re-issues a request captured by ``get_network_requests`` (by its request id,
  or the latest whose URL contains a text): method, URL and request headers from the capture
  (``Network.requestWillBeSent``; never its cookies), the body from ``Network.getRequestPostData``,
  the browser's cookies per hop; the model may override the method, body and headers. Captured
  headers may carry tokens (``Authorization``): they stay on the host, and a redirect to another
  origin carries only neutral headers (:data:`_CROSS_ORIGIN_HEADERS`), as browsers do.
- ``web_fetch`` (a host tool: offered only when ``enabledHostTools`` names it; registry rule 2)
  fetches a URL without the browser's cookies and returns its text, size-bounded.

Downloads and replays change state somewhere (a download is listed under "No replay" in
protocol.md section 5, and a replayed POST may order twice): both are page-changing, so the
registry never retries them. ``web_fetch`` is a read.
"""

from __future__ import annotations

import asyncio
import contextlib
import html.parser
import json
import re
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any, Literal
from urllib.parse import unquote, urljoin, urlsplit

import aiohttp
from pydantic import Field

from actors.tools.cdp import CdpError
from actors.tools.files import FileSandbox
from actors.tools.registry import Registry
from actors.tools.shared import check_url, cut, evaluate, tab_key, untrusted
from actors.tools.tool_def import TabSession, ToolArgs, ToolContext, ToolError, ToolOutput

__all__ = ["FetchResult", "fetch", "html_text", "register_transfer_tools"]

_MAX_REDIRECTS = 5
_TEXT_LIMIT = 20_000
_REPLAY_BODY_LIMIT = 1024 * 1024


@dataclass(frozen=True, slots=True, kw_only=True)
class FetchResult:
    status: int
    url: str
    headers: dict[str, str]
    body: bytes
    truncated: bool


async def _cookie_header(cdp: TabSession | None, url: str, timeout: float) -> str | None:
    if cdp is None:
        return None
    res = await cdp.send("Network.getCookies", {"urls": [url]}, timeout=timeout)
    pairs = [f"{c['name']}={c.get('value', '')}" for c in res.get("cookies", [])]
    return "; ".join(pairs) or None


#: The only request headers that follow a redirect to another origin (scheme, host and port).
_CROSS_ORIGIN_HEADERS = frozenset({"user-agent", "accept", "accept-language", "content-type"})


def _origin(url: str) -> tuple[str, str, int | None]:
    parts = urlsplit(url)
    return parts.scheme, (parts.hostname or "").lower(), parts.port


async def fetch(
    url: str,
    *,
    method: str = "GET",
    headers: dict[str, str] | None = None,
    body: bytes | None = None,
    cdp: TabSession | None = None,
    max_bytes: int,
    timeout: float = 30.0,
    truncate: bool = False,
) -> FetchResult:
    """One HTTP exchange from the host. With ``cdp``, each hop carries the browser's cookies for
    its URL. A body over ``max_bytes`` is cut (``truncate``) or refused with a ToolError."""
    jar = aiohttp.DummyCookieJar()  # cookies come from the browser, per hop; none are kept
    client_timeout = aiohttp.ClientTimeout(total=timeout)
    headers = dict(headers or {})
    first_origin = _origin(url)
    async with aiohttp.ClientSession(cookie_jar=jar, timeout=client_timeout) as session:
        for _ in range(_MAX_REDIRECTS + 1):
            url = check_url(url)  # every hop: http(s) only (protocol.md section 5, "URLs")
            if _origin(url) != first_origin:
                # Another origin: no credentials or page-specific headers go along.
                headers = {k: v for k, v in headers.items() if k.lower() in _CROSS_ORIGIN_HEADERS}
            hop = dict(headers)
            cookie = await _cookie_header(cdp, url, timeout)
            if cookie:
                hop["Cookie"] = cookie
            try:
                async with session.request(
                    method, url, headers=hop, data=body, allow_redirects=False
                ) as resp:
                    if resp.status in {301, 302, 303, 307, 308} and "Location" in resp.headers:
                        url = urljoin(url, resp.headers["Location"])
                        if resp.status == 303 or (resp.status in {301, 302} and method == "POST"):
                            method, body = "GET", None
                        continue
                    data = bytearray()
                    truncated = False
                    async for chunk in resp.content.iter_chunked(64 * 1024):
                        data += chunk
                        if len(data) > max_bytes:
                            if not truncate:
                                raise ToolError(
                                    f"{url[:200]} is larger than the limit of {max_bytes} bytes"
                                )
                            del data[max_bytes:]
                            truncated = True
                            break
                    return FetchResult(
                        status=resp.status,
                        url=str(resp.url),
                        headers={k: v for k, v in resp.headers.items()},
                        body=bytes(data),
                        truncated=truncated,
                    )
            except (aiohttp.ClientError, TimeoutError) as exc:
                raise ToolError(
                    f"fetching {url[:200]} failed: {exc or type(exc).__name__}"
                ) from None
    raise ToolError(f"more than {_MAX_REDIRECTS} redirects from {url[:200]}")


class _TextExtractor(html.parser.HTMLParser):
    _SKIP = frozenset({"script", "style", "noscript", "template", "svg", "head"})
    _BLOCK = frozenset(
        {"p", "div", "br", "li", "tr", "h1", "h2", "h3", "h4", "h5", "h6", "section", "article"}
    )

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.title = ""
        self._skip = 0
        self._in_title = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "title":
            self._in_title = True
        elif tag in self._SKIP:
            self._skip += 1
        elif tag in self._BLOCK:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
        elif tag in self._SKIP and self._skip:
            self._skip -= 1
        elif tag in self._BLOCK:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title += data
        elif not self._skip:
            self.parts.append(data)


def html_text(markup: str) -> tuple[str, str]:
    """``(title, visible text)`` of an HTML document, whitespace squeezed."""
    parser = _TextExtractor()
    with contextlib.suppress(Exception):  # broken markup: keep what was parsed
        parser.feed(markup)
        parser.close()
    text = re.sub(r"[ \t\r\f\v]+", " ", "".join(parser.parts))
    text = re.sub(r"\s*\n\s*", "\n", text).strip()
    return parser.title.strip(), text


def _decode(res: FetchResult) -> str:
    ctype = res.headers.get("Content-Type", "")
    m = re.search(r"charset=([\w-]+)", ctype)
    try:
        return res.body.decode(m.group(1) if m else "utf-8", errors="replace")
    except LookupError:
        return res.body.decode("utf-8", errors="replace")


def _file_name(res: FetchResult, wanted: str | None) -> str:
    if wanted:
        return wanted
    disp = res.headers.get("Content-Disposition", "")
    m = re.search(r"filename\*=UTF-8''([^;]+)|filename=\"?([^\";]+)\"?", disp)
    name = unquote(m.group(1) or m.group(2)) if m else PurePosixPath(urlsplit(res.url).path).name
    name = re.sub(r"[^\w.\- ]+", "_", PurePosixPath(name.replace("\\", "/")).name).strip(" .")
    return f"downloads/{name or 'download'}"


async def _absolute(ctx: ToolContext, url: str) -> str:
    """``url`` made absolute against the current page when it is a path (``/x``, ``./x``, ``?q``);
    anything else is a URL (a bare host gets ``https://``, as for ``navigate``)."""
    if not url.strip().startswith(("/", ".", "?", "#")):
        return check_url(url)
    href = str(await evaluate(ctx.page(), "location.href", timeout=ctx.timeout))
    return check_url(urljoin(href, url))


async def _user_agent(ctx: ToolContext) -> dict[str, str]:
    with contextlib.suppress(CdpError):
        ver = await ctx.page().send("Browser.getVersion", timeout=ctx.timeout)
        if ver.get("userAgent"):
            return {"User-Agent": str(ver["userAgent"])}
    return {}


class DownloadArgs(ToolArgs):
    url: str = Field(description="http(s) URL, or a path like /files/x.pdf on the current site")
    file_name: str | None = Field(default=None, description="where to save it in the files folder")
    max_bytes: int | None = Field(default=None, ge=1, description="default: the host's file limit")


class ReplayArgs(ToolArgs):
    request_id: str | None = Field(default=None, description="the request's id")
    url_contains: str | None = Field(default=None, description="or: latest request whose URL has")
    method: str | None = Field(default=None, description="override the method")
    headers: dict[str, str] | None = Field(default=None, description="extra request headers")
    body: str | None = Field(default=None, description="override the request body")
    max_chars: int = Field(default=_TEXT_LIMIT, ge=100, le=200_000)


class WebFetchArgs(ToolArgs):
    url: str = Field(description="http(s) URL")
    max_chars: int = Field(default=_TEXT_LIMIT, ge=100, le=200_000)
    raw: bool = Field(default=False, description="return the body as is, not extracted text")


def _captured(ctx: ToolContext) -> dict[str, dict[str, Any]]:
    monitors = ctx.state.get("browser.monitors", {})
    mon = monitors.get(tab_key(ctx.page()))
    if mon is None or "Network" not in mon.enabled:
        raise ToolError("no requests captured: call get_network_requests first")
    requests: dict[str, dict[str, Any]] = mon.requests
    return requests


def register_transfer_tools(reg: Registry) -> None:
    """Add ``download_file``, ``replay_request`` and ``web_fetch`` to ``reg``."""

    @reg.register(
        "download_file",
        "Download a URL with the browser's cookies for it and save it in Browy's files folder.",
        DownloadArgs,
        page_changing=True,
    )
    async def download_file(args: DownloadArgs, ctx: ToolContext) -> ToolOutput:
        if not isinstance(ctx.files, FileSandbox):
            raise ToolError("there is no files folder to save into")
        box = ctx.files
        limit = min(args.max_bytes or box.max_file_bytes, box.max_file_bytes)
        url = await _absolute(ctx, args.url)
        res = await fetch(
            url, headers=await _user_agent(ctx), cdp=ctx.page(), max_bytes=limit, timeout=60.0
        )
        if not 200 <= res.status < 300:
            raise ToolError(f"the server answered {res.status} for {res.url[:200]}")
        name = _file_name(res, args.file_name)
        saved = await asyncio.to_thread(lambda: box.relative(box.write(name, res.body)))
        ctype = res.headers.get("Content-Type", "?")
        return ToolOutput(
            content=f"saved {len(res.body)} bytes ({ctype}) from {res.url} as {saved}",
            summary=f"downloaded {saved}"[:200],
            data={"file": saved, "bytes": len(res.body), "url": res.url},
        )

    @reg.register(
        "replay_request",
        "Send again a request seen by get_network_requests (by id, or the latest whose URL "
        "contains a text), with the page's cookies; returns status and body. Without either, "
        "lists the captured requests with their ids.",
        ReplayArgs,
        page_changing=True,
    )
    async def replay_request(args: ReplayArgs, ctx: ToolContext) -> ToolOutput:
        requests = _captured(ctx)
        rid: str | None = None
        if args.request_id is not None:
            rid = args.request_id if args.request_id in requests else None
        elif args.url_contains:
            rid = next(
                (k for k, r in reversed(requests.items()) if args.url_contains in r["url"]), None
            )
        if rid is None:
            listing = "\n".join(
                f"{k} {r['method']} {r['url'][:200]}" for k, r in list(requests.items())[-30:]
            )
            raise ToolError("no such captured request; recent ones (id method url):\n" + listing)
        req = requests[rid]
        method = (args.method or req["method"] or "GET").upper()
        body: bytes | None = args.body.encode() if args.body is not None else None
        headers: dict[str, str] = dict(req.get("headers") or {})
        if not any(k.lower() == "user-agent" for k in headers):
            headers |= await _user_agent(ctx)
        if body is None and method not in {"GET", "HEAD"}:
            with contextlib.suppress(CdpError):
                post = await ctx.page().send(
                    "Network.getRequestPostData", {"requestId": rid}, timeout=ctx.timeout
                )
                body = str(post.get("postData", "")).encode()
        if body is not None and not any(
            k.lower() == "content-type" for k in [*headers, *(args.headers or {})]
        ):
            text = body.decode(errors="replace").lstrip()
            is_json = text[:1] in {"{", "["}
            headers["Content-Type"] = (
                "application/json" if is_json else "application/x-www-form-urlencoded"
            )
        for name, value in (args.headers or {}).items():  # the model's, case-insensitively
            headers = {k: v for k, v in headers.items() if k.lower() != name.lower()}
            headers[name] = value
        res = await fetch(
            req["url"],
            method=method,
            headers=headers,
            body=body,
            cdp=ctx.page(),
            max_bytes=_REPLAY_BODY_LIMIT,
            truncate=True,
        )
        text = cut(_decode(res), args.max_chars)
        ctype = res.headers.get("Content-Type", "?")
        return ToolOutput(
            content=f"{method} {res.url} -> {res.status} ({ctype})\n" + untrusted(text),
            summary=f"{method} {res.status} {res.url}"[:200],
            data={"status": res.status, "url": res.url},
        )

    @reg.register(
        "web_fetch",
        "Fetch a URL from the host (not the browser: no cookies) and return its text, "
        "size-bounded.",
        WebFetchArgs,
        page_changing=False,
    )
    async def web_fetch(args: WebFetchArgs, ctx: ToolContext) -> ToolOutput:
        url = check_url(args.url)
        res = await fetch(url, max_bytes=args.max_chars * 8, truncate=True)
        raw = _decode(res)
        kind: Literal["html", "text"] = (
            "html" if "html" in res.headers.get("Content-Type", "") else "text"
        )
        title, text = ("", raw) if args.raw or kind != "html" else html_text(raw)
        head = f"{res.status} {res.url}" + (f" {json.dumps(title)}" if title else "")
        more = " (cut at the size limit)" if res.truncated else ""
        return ToolOutput(
            content=head + more + "\n" + untrusted(cut(text, args.max_chars)),
            summary=f"{res.status} {res.url}"[:200],
            data={"status": res.status, "url": res.url, "title": title},
        )
