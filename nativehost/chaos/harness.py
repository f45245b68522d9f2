"""``browy chaos``: the fault-injection harness, run as a product feature and in CI (seeded, short).

Two modes, each a :class:`nativehost.chaos.run.ChaosRun`:

- in-process (:mod:`nativehost.chaos.in_process`): the daemon's real actors in this process on a
  temporary ``BROWY_HOME``, over its real link, against the scripted model server and several fake
  extension peers, many sessions at once; faults are injected into actors, link frames, the model
  server, the fake browser and the journal's fsync.
- ``--process`` (:mod:`nativehost.chaos.process_mode`): each browser profile is a real relay
  process (``python -m nativehost.relay.main``, pipes as Chrome starts it) that starts the real
  daemon; ``relay_kill`` SIGKILLs a relay mid-turn (the fake extension starts a new relay and sends
  ``hello`` and its ``session.start``s again, as the service worker does), ``daemon_kill`` SIGKILLs
  the daemon mid-turn (the relays reconnect and start a new one). It adds the invariant
  ``no_leftover`` and measures ``flat`` on the daemon.

Invariants checked after every run (a non-zero exit if one fails):

- ``one_end``: every ``chat.send`` got exactly one ``chat.done`` or ``chat.error``, none later than
  its deadline (``hung = 0``, no extra ends);
- ``no_duplicate``: no page-changing command was executed twice (by call id or by target);
- ``unknown_reported``: every page-changing command that was executed but whose answer did not
  reach the host is journaled (and, if shown, reported) with outcome ``unknown`` — never ``ok`` or
  ``error``; none is ever reported ``error``;
- ``journaled``: every turn that ended in ``chat.done`` is in its chat's journal with an end;
- ``recovered``: after every fault, a turn sent later completed (``lost = 0``);
- ``flat``: open file descriptors and memory do not grow over the run; in-process, the daemon's
  memory (this process's RSS less what the harness's own records hold) grows by at most 5 MiB
  over the later part of the run (from 25% of the duration to the end, once the daemon's bounded
  structures are full), judged when that part lasts 7.5 minutes or more;
- ``supervised`` (in-process): every exit of a supervised agent actor was followed by its restart
  within 5 s, restarts stayed within the restart intensity, more exits than it allows escalated,
  and every injected crash shows as an exit (:func:`nativehost.chaos.checks.check_supervision`).
  A daemon whose supervisor escalated exits; the harness starts a new one, as the relays would.

The report (JSON, plus a human table) has faults injected by kind, turns run, completed, definite
errors, hung, duplicated, lost, the recovery time p50/p99 per fault kind, and memory: the
growth of the daemon and of the harness's records over the later part of the run (in MiB and MiB
per minute: a one-hour run's last 45 minutes).

The harness's other modules: :mod:`nativehost.chaos.faults` (the fault kinds, the fsync and
crash-on-cue seams, the scripted model's steps), :mod:`nativehost.chaos.report` (options, the
report, its JSON and the human table), :mod:`nativehost.chaos.checks` (the invariant checks over
the records and journals), :mod:`nativehost.chaos.measure` (descriptors, memory, processes),
:mod:`nativehost.chaos.peer` with :mod:`nativehost.chaos.panels` and
:mod:`nativehost.chaos.fake_browser` (the fake extension), and :mod:`nativehost.chaos.relay_peer`
(process mode's relay side). This module is the command line (:func:`main`).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TextIO

from nativehost.chaos.faults import ALL_FAULTS, IN_PROCESS_FAULTS, PROCESS_FAULTS
from nativehost.chaos.in_process import run_chaos
from nativehost.chaos.process_mode import run_process_chaos
from nativehost.chaos.report import ChaosOptions, format_table
from nativehost.cli.progress import LiveLine, is_live

__all__ = ["live_line_for", "main"]


def _parse_faults(text: str) -> tuple[str, ...]:
    if text in ("", "all"):
        return ALL_FAULTS  # filtered by the mode
    kinds = tuple(k.strip() for k in text.split(",") if k.strip())
    unknown = [k for k in kinds if k not in ALL_FAULTS]
    if unknown:
        raise argparse.ArgumentTypeError(
            f"unknown fault kinds {', '.join(unknown)} (known: {', '.join(ALL_FAULTS)})"
        )
    return kinds


def live_line_for(
    err: TextIO, env: Mapping[str, str], *, json_report: Path | None
) -> LiveLine | None:
    """The live status line: only on a terminal, and not with ``--json`` (as asked of every
    progress display: a run kept for its report has the report)."""
    return LiveLine(err) if json_report is None and is_live(err, env) else None


def main(
    argv: Sequence[str] | None = None,
    out: TextIO | None = None,
    err: TextIO | None = None,
    env: Mapping[str, str] | None = None,
) -> int:
    """``browy chaos [--seed N] [--duration S] [--sessions N] [--faults k1,k2] [--json PATH]
    [--process]``: run the harness, print the table, write the JSON report; 1 if an invariant
    failed, 2 for bad arguments. On a terminal (*err*) without ``--json``, a live status line
    says how the run goes so far."""
    out = out or sys.stdout
    err = err or sys.stderr
    parser = argparse.ArgumentParser(
        prog="browy chaos",
        description="Fault-injection run of the daemon with invariant checks.",
        epilog="exit codes:\n  0    every invariant held\n  1    an invariant failed\n"
        "  2    bad arguments",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--duration", type=float, default=60.0, help="seconds (default 60)")
    parser.add_argument("--sessions", type=int, default=8)
    parser.add_argument(
        "--faults", type=_parse_faults, default=ALL_FAULTS,
        help=f"comma-separated kinds or 'all' (default; in-process: {', '.join(IN_PROCESS_FAULTS)};"
        f" --process: {', '.join(PROCESS_FAULTS)})",
    )  # fmt: skip
    parser.add_argument("--json", type=Path, help="also write the JSON report here")
    parser.add_argument("--process", action="store_true", help="the process-mode scenario")
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0) if exc.code in (0, None) else 2
    if args.sessions < 1 or args.duration <= 0:
        print("browy chaos: --sessions and --duration must be positive", file=sys.stderr)
        return 2
    known = PROCESS_FAULTS if args.process else IN_PROCESS_FAULTS
    faults = tuple(k for k in args.faults if k in known)
    if not faults:
        mode = "--process" if args.process else "in-process mode"
        print(f"browy chaos: none of those fault kinds applies to {mode}", file=sys.stderr)
        return 2
    line = live_line_for(err, os.environ if env is None else env, json_report=args.json)
    opts = ChaosOptions(
        seed=args.seed,
        duration=args.duration,
        sessions=args.sessions,
        faults=faults,
        live=line.show if line is not None else None,
    )
    run = run_process_chaos if args.process else run_chaos
    try:
        report = asyncio.run(run(opts))
    finally:
        if line is not None:
            line.clear()
    out.write(format_table(report) + "\n")
    if args.json is not None:
        args.json.write_text(json.dumps(report.as_json(), indent=2) + "\n")
    return 0 if report.ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
