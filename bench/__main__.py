"""Run every ``bench/bench_*.py`` module's ``main()``: ``python -m bench [name ...]``.

With names (``python -m bench codec``), run only ``bench_<name>`` modules.
"""

import importlib
import sys
from pathlib import Path


def run(argv: list[str]) -> int:
    names = sorted(p.stem for p in Path(__file__).parent.glob("bench_*.py"))
    wanted = {f"bench_{a.removeprefix('bench_')}" for a in argv}
    if wanted - set(names):
        print(f"unknown benchmark(s): {', '.join(sorted(wanted - set(names)))}", file=sys.stderr)
        return 2
    for name in names:
        if wanted and name not in wanted:
            continue
        print(f"== {name}")
        importlib.import_module(f"bench.{name}").main()
        print()
    return 0


if __name__ == "__main__":
    raise SystemExit(run(sys.argv[1:]))
