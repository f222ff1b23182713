"""What every benchmark script shares: the header of its results (machine, date, commit,
command), option checks, where it may write, the headline rows the leaderboard reads, and the
solver warm-up before the first timed solve. Written once so that no script misses one."""

from __future__ import annotations

import argparse
import contextlib
import importlib.metadata
import json
import math
import os
import platform
import shlex
import subprocess
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from solvers.catalog import get_spec
from solvers.catalog import warm_up as warm_one
from solvers.errors import UnknownSolverError

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results"
#: Inputs a script computes once and reuses (reference solutions, generated instances):
#: git-ignored, so a results folder holds only the current tables.
CACHE = REPO / "benchmarks" / "cache"
DATA = REPO.parent / "shared" / "data"
#: The header clause of a script that warms its solvers up before timing them.
WARMED = "each solver warmed up (imports, weights, compiled kernels) before its first timed solve"


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter,
                    argparse.RawDescriptionHelpFormatter):
    """Defaults beside every option, and the module docstring's layout kept as written."""


def parser_for(prog: str, doc: str | None) -> argparse.ArgumentParser:
    """A parser whose description is the whole module docstring (its first line alone would
    cut sentences in half) and whose --help shows every default."""
    return argparse.ArgumentParser(prog=f"python -m {prog}", description=doc,
                                   formatter_class=HelpFormatter)


def command(module: str, argv: Sequence[str] | None) -> str:
    """The command line of this run, quoted so that it parses when copied, empty arguments
    such as ``--more-limits ''`` included."""
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
    of a ValueError traceback (``--limits abc``, ``--limits 0``)."""
    return _parse(parser, option, text, float, positive, allow_empty)


def integers(parser: argparse.ArgumentParser, option: str, text: str, positive: bool = False,
             allow_empty: bool = False) -> list[int]:
    """As ``numbers``, whole numbers (``--seeds abc``, ``--sizes abc``)."""
    return _parse(parser, option, text, int, positive, allow_empty)


def check_solvers(parser: argparse.ArgumentParser, names: Iterable[str],
                  option: str = "--solvers", problem: str | None = None) -> None:
    """Refuse an unknown solver, or one that does not solve ``problem``, before anything runs,
    rather than a traceback or a table of error rows and exit 0."""

    for name in names:
        try:
            spec = get_spec(name)
        except UnknownSolverError as exc:
            parser.error(f"{option}: {exc}")
        if problem is not None and problem not in spec.problems:
            parser.error(f"{option}: {name} does not solve {problem}")


def check_out(parser: argparse.ArgumentParser, out: Path) -> None:
    """Create --out's folder before the run, so a long run cannot end in a crash on writing
    its results."""
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        parser.error(f"--out: cannot create {out.parent}: {exc.strerror or exc}")
    if out.is_dir():
        parser.error(f"--out: {out} is a folder; give a file name")


def check_data(parser: argparse.ArgumentParser, data: Path, pattern: str, what: str) -> None:
    """A requested set with no instance files is an error (exit 2), not an empty table with
    nan means and exit 0."""
    if not any(data.glob(pattern)):
        parser.error(f"--data: no {what} ({pattern}) under {data}")


def writes_results(out: Path) -> bool:
    """Whether this run publishes into benchmarks/results: only such a run may add to the
    reference caches, so that a quick ``--count 2 --out out/x.md`` run cannot store fresh,
    noisy PyVRP references that later published tables would read."""
    return out.resolve().is_relative_to(RESULTS.resolve())


def warm_up(names: Iterable[str]) -> None:
    """Each solver's imports, weights and compiled kernels loaded before the first timed
    solve: on a fresh checkout the first ils/reld wall would include up to a minute of numba
    compiling."""

    for name in dict.fromkeys(names):
        warm_one(name)


def machine_info(packages: tuple[str, ...] = ("ortools", "pyvrp", "numpy", "vrplib",
                                               "cosolve")) -> dict[str, Any]:
    """What the figures were measured on, with the load at the start (the cores may be
    shared, and wall-clock-limited searches then see less CPU)."""
    ram_gib = None
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                ram_gib = round(int(line.split()[1]) / 1024**2, 1)
    versions = {}
    for package in packages:
        try:
            versions[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            versions[package] = "not installed"
    return {"cpu": cpu_model(), "cores": os.cpu_count(), "ram_gib": ram_gib,
            "python": platform.python_version(),
            "os": f"{platform.system()} {platform.release()}",
            "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
            "versions": versions}


def cpu_model() -> str:
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def git_commit() -> str:
    """The commit the code ran at, ``-dirty`` when the working tree had changes."""
    try:
        done = subprocess.run(["git", "describe", "--always", "--dirty", "--abbrev=12"],
                              cwd=REPO, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    return done.stdout.strip() or "unknown"


def relative(path: Path | str) -> str:
    """A path as the header shows it: relative to the repository, never this machine's."""
    return os.path.relpath(Path(path).resolve(), REPO)


def provenance(module: str, argv: Sequence[str] | None, started: str | None = None,
               solvers: Iterable[str] = ()) -> dict[str, Any]:
    """The header every results file carries: the exact command, the date, the commit and
    the machine (CPU model, cores), and for learned solvers among ``solvers`` the checkpoints
    they load with the training behind each."""
    from datetime import UTC, datetime

    prov = {"command": command(module, argv),
            "date": started or datetime.now(UTC).isoformat(timespec="seconds"),
            "commit": git_commit(), "machine": {"cpu": cpu_model(), "cores": os.cpu_count()}}
    found = checkpoints(solvers)
    if found:
        prov["checkpoints"] = found
    return prov


#: The learned solvers, by the ``solver`` their checkpoints carry in weights/MANIFEST.json
#: (``sil_ls`` runs the ``sil`` model).
MODEL_OF = {"reld": "reld", "polynet": "polynet", "sil": "sil", "sil_ls": "sil",
            "goodrl": "goodrl"}


def checkpoints(solvers: Iterable[str], commit: str | None = None) -> list[dict[str, Any]]:
    """The checkpoints the learned solvers among ``solvers`` load, as weights/MANIFEST.json
    records them (now, or at ``commit``): file, sha256 prefix and the CPU and GPU minutes of
    training behind it, so that every figure a learned solver earns names its weights."""
    models = {MODEL_OF[s] for s in solvers if s in MODEL_OF}
    if not models:
        return []
    if commit is None:
        text = (REPO / "weights" / "MANIFEST.json").read_text()
    else:
        text = subprocess.run(
            ["git", "show", f"{commit.removesuffix('-dirty')}:weights/MANIFEST.json"],
            cwd=REPO, capture_output=True, text=True, check=True).stdout
    found = []
    for e in json.loads(text)["checkpoints"]:
        if e.get("solver") not in models:
            continue
        found.append({"file": e["file"], "sha256": e["sha256"][:12],
                      "cpu_minutes": e.get("cpu_minutes", 0.0),
                      "gpu_minutes": e.get("gpu_minutes", 0.0)})
        if e.get("warm_start"):
            # the checkpoint it was warm-started from (MANIFEST.json says per entry
            # whether the minutes count the parent's)
            found[-1]["warm_start"] = e["warm_start"].split()[0]
    return found


def checkpoint_for(found: Iterable[dict[str, Any]], solver: str, problem: str
                   ) -> dict[str, Any] | None:
    """The checkpoint of ``found`` that ``solver`` loads for ``problem`` (SIL serves every
    problem with its TSP model; GOODRL has one)."""
    model = MODEL_OF.get(solver)
    if model is None:
        return None
    names = {f"{model}_{problem}.pt", f"{model}.pt"} | ({"sil_tsp.pt"} if model == "sil" else set())
    return next((c for c in found if c["file"] in names), None)


def training_label(checkpoint: dict[str, Any]) -> str:
    """A checkpoint's training as a table shows it: "258 CPU min", "358 CPU + 1 GPU min on
    reld_tsp.pt" (then the checkpoint it was warm-started from)."""
    cpu, gpu = checkpoint.get("cpu_minutes") or 0.0, checkpoint.get("gpu_minutes") or 0.0
    label = f"{cpu:.0f} CPU + {gpu:.0f} GPU min" if gpu >= 0.5 else f"{cpu:.0f} CPU min"
    return label + (f" on {checkpoint['warm_start']}" if checkpoint.get("warm_start") else "")


def header_lines(prov: dict[str, Any] | list[dict[str, Any]]) -> list[str]:
    """The markdown lines of a header; a table assembled from several runs (one per section)
    names each."""
    lines = []
    for p in prov if isinstance(prov, list) else [prov]:
        what = f" ({p['section']})" if p.get("section") else ""
        m = p["machine"]
        lines += [f"- Command{what}: `{p['command']}`",
                  f"- Date: {p['date']}; commit `{p['commit']}`; machine {m['cpu']}, "
                  f"{m['cores']} cores"]
        if p.get("checkpoints"):
            lines.append("- Checkpoints: " + "; ".join(
                f"`{c['file']}` {c['sha256']} (trained {training_label(c)})"
                for c in p["checkpoints"]))
    return lines


def headline(family: str, set_name: str, solver: str, budget: str, gap: float | None,
             instances: int, reference: str, checkpoint: dict[str, Any] | None = None
             ) -> dict[str, Any]:
    """One leaderboard row: the mean gap (%) of ``solver`` on a set at a fixed budget, with
    the checkpoint behind it for a learned solver. The gap keeps six decimals: rounded to
    three, a mean of 0.2649 printed as 0.27 on the leaderboard beside 0.26 in its table."""
    row = {"family": family, "set": set_name, "solver": solver, "budget": budget,
           "gap_percent": None if gap is None else round(float(gap), 6),
           "instances": instances, "reference": reference}
    if checkpoint is not None:
        row["checkpoint"] = checkpoint
    return row


def write_table(out: Path, lines: list[str], data: dict[str, Any],
                prov: dict[str, Any] | list[dict[str, Any]],
                rows: list[dict[str, Any]]) -> None:
    """The table to ``out`` and its data beside it as .json, each with the header; the JSON
    also holds the headline rows that benchmarks.leaderboard gathers."""
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines).rstrip("\n") + "\n")
    payload = {"provenance": prov, "headline": rows, **data}
    out.with_suffix(".json").write_text(json.dumps(payload, indent=1, default=str) + "\n")
