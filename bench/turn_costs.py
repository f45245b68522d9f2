"""Where a turn's CPU goes, for ``bench_turns``: a cProfile grouped by the part of the system.

:func:`cost_table` turns a cProfile of a daemon run into shares of its CPU by part: the model
call through the SDK and the scripted model server (the bare baseline does the same work), the
bench's peers decoding the daemon's frames, and the daemon's own parts — the turn (its loop, its
tools, its end), the journal, the link (wire models, JSON, link frames, the writer), the actor
runtime and the supervisors (mailbox hops, a task per turn), the event loop. A builtin's time
(``{method 'send' of socket}``, ``isinstance``...) is split among its callers, so that it counts
where it was spent.

cProfile slows small functions more than large ones, so the shares are indicative, not exact;
they are printed as ms of the unprofiled ``cpu/turn`` measured in the same run.
"""

from __future__ import annotations

import pstats
from collections import Counter
from collections.abc import Iterable

__all__ = ["BARE_PARTS", "cost_table", "journal_records_per_turn"]

#: (part, where its code lives): the first match wins; a path fragment or a builtin's name.
PARTS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "model call: SDK, HTTP client",
        ("/openai/", "/httpx", "/httpcore", "/h11/", "/anyio/", "/sniffio/", "/distro/",
         "/typing_extensions", "/typing.py", "/inspect.py", "/json/", "/uuid.py", "/tenacity/",
         "actors/model/"),
    ),
    ("model server (scripted)", ("/aiohttp/", "/multidict/", "/yarl/", "nativehost/demo/")),
    ("peers: reading the frames", ("tests/helpers/", "bench/")),
    (
        "turn: loop, queue, tools, end",
        ("actors/agent/turn", "actors/agent/tool", "actors/agent/wire_", "actors/agent/links",
         "actors/agent/end_delivery", "actors/tools/", "actors/browser/"),
    ),
    ("journal: records, fsync", ("actors/store/",)),
    (
        "link: models, JSON, frames",
        ("messages/", "actors/link/", "/pydantic", "orjson", "actors/agent/connection",
         "actors/agent/sessions"),
    ),
    (
        "runtime: mailboxes, supervisors",
        ("actors/runtime/", "supervisors/", "/pykka/", "actors/agent/"),
    ),
    (
        "event loop, sockets, threads",
        ("/asyncio/", "/selectors.py", "/socket.py", "/threading.py", "/concurrent/", "socket",
         "select", "epoll", "_thread"),
    ),
)  # fmt: skip
#: Helpers every part calls: like a builtin, their own time goes to their callers' parts.
SHARED = ("/msgpack/", "/contextlib.py", "/copy.py", "/enum.py", "/functools.py", "<frozen abc>",
          "/_weakrefset.py", "/weakref.py", "/dataclasses.py", "<frozen importlib", "/pathlib.py",
          "<string>")  # fmt: skip
#: The parts the bare baseline also runs (its ModelGateway calls the same model server).
BARE_PARTS = ("model call: SDK, HTTP client", "model server (scripted)")
OTHER = "other"


def _part(where: str) -> str:
    for part, fragments in PARTS:
        if any(f in where for f in fragments):
            return part
    return OTHER


def _where(func: tuple[str, int, str]) -> str:
    filename, _, name = func
    return name if filename == "~" else filename


def _shared(func: tuple[str, int, str]) -> bool:
    return func[0] == "~" or any(f in func[0] for f in SHARED)


def parts_of(stats: pstats.Stats) -> Counter[str]:
    """CPU seconds by part; the own time of a builtin or a shared helper goes to the parts of
    its callers (through callers that are shared too), in proportion to what each spent."""
    table = stats.stats  # type: ignore[attr-defined]
    memo: dict[tuple[str, int, str], dict[str, float]] = {}

    def weights(func: tuple[str, int, str], depth: int) -> dict[str, float]:
        """How *func*'s time divides among parts (fractions summing to 1)."""
        if func in memo:
            return memo[func]
        callers = table[func][4] if func in table else {}
        if not _shared(func) or not callers or depth > 4:
            return {_part(_where(func)): 1.0}
        memo[func] = {_part(_where(func)): 1.0}  # a recursion through func ends here
        spent = sum(c[2] for c in callers.values()) or 1.0
        out: Counter[str] = Counter()
        for caller, (_, _, own_there, _) in callers.items():
            for part, w in weights(caller, depth + 1).items():
                out[part] += w * own_there / spent
        memo[func] = dict(out)
        return memo[func]

    by_part: Counter[str] = Counter()
    for func, (_, _, own, _, _) in table.items():
        for part, w in weights(func, 0).items():
            by_part[part] += own * w
    return by_part


def cost_table(stats: pstats.Stats, cpu_per_turn_ms: float, bare_ms: float) -> list[str]:
    """The lines of the breakdown: each part's share of a profiled run, as ms of an unprofiled
    turn (*cpu_per_turn_ms*), the daemon's parts first; *bare_ms* is the bare call's CPU."""
    by_part = parts_of(stats)
    total = sum(by_part.values()) or 1.0
    lines = [f"  {'part':<34}{'share':>7}{'ms/turn':>9}"]
    daemon = [p for p, _ in PARTS if p not in BARE_PARTS] + [OTHER]
    for part in [*daemon, *BARE_PARTS]:
        share = by_part.get(part, 0.0) / total
        lines.append(f"  {part:<34}{share:>7.1%}{share * cpu_per_turn_ms:>9.2f}")
    bare_share = sum(by_part.get(p, 0.0) for p in BARE_PARTS) / total
    lines.append(
        f"  the bare call's parts come to {bare_share * cpu_per_turn_ms:.2f} ms here "
        f"(measured bare: {bare_ms:.2f} ms); the rest is the daemon's and the peers'"
    )
    return lines


def journal_records_per_turn(kinds: Iterable[str], turns: int) -> str:
    """``'5.0 (begin 1.0, assistant 1.0, ...)'`` from the record kinds of the measured turns."""
    counts = Counter(kinds)
    total = sum(counts.values())
    each = ", ".join(f"{k} {n / turns:.1f}" for k, n in counts.most_common())
    return f"{total / turns:.1f} ({each})"
