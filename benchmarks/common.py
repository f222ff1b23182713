"""What every benchmark script shares: its header command, option checks, where it may write
and the solver warm-up before the first timed solve (QA sweep: the scripts had each grown
their own, and each missed a different one)."""

from __future__ import annotations

import argparse
import math
import shlex
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results"
DATA = REPO.parent / "shared" / "data"
#: The header clause of a script that warms its solvers up before timing them.
WARMED = "each solver warmed up (imports, weights, compiled kernels) before its first timed solve"


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter,
                    argparse.RawDescriptionHelpFormatter):
    """Defaults beside every option, and the module docstring's layout kept as written."""


def parser_for(prog: str, doc: str | None) -> argparse.ArgumentParser:
    """A parser whose description is the whole module docstring (QA sweep: a docstring's
    first line alone cut sentences in half) and whose --help shows every default."""
    return argparse.ArgumentParser(prog=f"python -m {prog}", description=doc,
                                   formatter_class=HelpFormatter)


def command(module: str, argv: Sequence[str] | None) -> str:
    """The command line of this run, quoted so that it parses when copied: ``' '.join``
    dropped empty arguments such as ``--more-limits ''`` (QA sweep)."""
    given = list(sys.argv[1:] if argv is None else argv)
    return shlex.join(["python", "-m", module, *given])


def _parse(parser: argparse.ArgumentParser, option: str, text: str, kind: type,
           positive: bool, allow_empty: bool) -> list[Any]:
    parts = [p.strip() for p in text.split(",") if p.strip()]
    try:
        values = [kind(p) for p in parts]
    except ValueError:
        parser.error(f"{option}: give comma-separated numbers, e.g. 1,2; got {text!r}")
    if not values and not allow_empty:
        parser.error(f"{option}: give at least one value")
    if any(not math.isfinite(v) or v < 0 or (positive and v == 0) for v in values):
        parser.error(f"{option}: every value must be {'positive' if positive else '≥ 0'} "
                     f"and finite; got {text!r}")
    return values


def numbers(parser: argparse.ArgumentParser, option: str, text: str, positive: bool = True,
            allow_empty: bool = False) -> list[float]:
    """A comma-separated list of numbers, or parser.error (exit 2) naming the option instead
    of a ValueError traceback (QA sweep: ``--limits abc``, ``--limits 0``)."""
    return _parse(parser, option, text, float, positive, allow_empty)


def integers(parser: argparse.ArgumentParser, option: str, text: str, positive: bool = False,
             allow_empty: bool = False) -> list[int]:
    """As ``numbers``, whole numbers (QA sweep: ``--seeds abc``, ``--sizes abc``)."""
    return _parse(parser, option, text, int, positive, allow_empty)


def check_solvers(parser: argparse.ArgumentParser, names: Iterable[str],
                  option: str = "--solvers", problem: str | None = None) -> None:
    """Refuse an unknown solver, or one that does not solve ``problem``, before anything runs
    (QA sweep: ``--solvers bogus`` gave a traceback, or a table of error rows and exit 0)."""
    from solvers.catalog import get_spec
    from solvers.errors import UnknownSolverError

    for name in names:
        try:
            spec = get_spec(name)
        except UnknownSolverError as exc:
            parser.error(f"{option}: {exc}")
        if problem is not None and problem not in spec.problems:
            parser.error(f"{option}: {name} does not solve {problem}")


def check_out(parser: argparse.ArgumentParser, out: Path) -> None:
    """Create --out's folder before the run, so a long run cannot end in a crash on writing
    its results (QA sweep: reld lost a whole run to a missing folder)."""
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        parser.error(f"--out: cannot create {out.parent}: {exc.strerror or exc}")
    if out.is_dir():
        parser.error(f"--out: {out} is a folder; give a file name")


def check_data(parser: argparse.ArgumentParser, data: Path, pattern: str, what: str) -> None:
    """A requested set with no instance files is an error (exit 2), not an empty table
    (QA sweep: missing ../shared/data gave empty tables, nan means and exit 0)."""
    if not any(data.glob(pattern)):
        parser.error(f"--data: no {what} ({pattern}) under {data}")


def writes_results(out: Path) -> bool:
    """Whether this run publishes into benchmarks/results: only such a run may add to the
    committed reference caches there (QA sweep: a ``--count 2 --out /tmp/..`` run added
    fresh, noisy PyVRP references to them)."""
    return out.resolve().is_relative_to(RESULTS.resolve())


def warm_up(names: Iterable[str]) -> None:
    """Each solver's imports, weights and compiled kernels loaded before the first timed
    solve (QA sweep: on a fresh checkout the first ils/reld wall included up to a minute of
    numba compiling)."""
    from solvers.catalog import warm_up as warm_one

    for name in dict.fromkeys(names):
        warm_one(name)
