"""Conventions every cosolve command shares: one-line errors with exit codes, stdout tables
that stay readable in a pipe, and plain JSON."""

from __future__ import annotations

import json
import math
import os
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import typer
from rich.console import Console

from cli import INTERRUPTED_LOADING
from solvers.catalog import all_specs
from solvers.contract import MAX_SEED, Budget
from solvers.device import torch_device_name
from solvers.errors import InstanceError
from solvers.routing.problem import CVRPInstance, Instance

T = TypeVar("T")

EXIT_SOLVER_FAILED = 1
EXIT_BAD_INPUT = 2
EXIT_INTERRUPTED = 130  # 128 + SIGINT, what shells expect of a command stopped by Ctrl-C
#: Width for tables written to a pipe or file, where rich would otherwise assume 80 columns.
PIPE_WIDTH = 140


def debugging() -> bool:
    """``COSOLVE_DEBUG`` set to anything but empty, 0, false, no or off: unexpected solver
    errors print their traceback (so ``COSOLVE_DEBUG=0`` does not turn it on)."""
    value = os.environ.get("COSOLVE_DEBUG", "").strip().lower()
    return value not in ("", "0", "false", "no", "off")


_json_failure: ContextVar[dict[str, Any] | None] = ContextVar("json_failure", default=None)


@contextmanager
def json_failures(enabled: bool, **document: Any) -> Iterator[None]:
    """Under ``--json``, a ``fail`` inside the block also prints ``document`` with the
    ``error`` on stdout, as a failed solve does (README: exit codes 1 and 2 come with a JSON
    document, so a script reading stdout is never left with nothing)."""
    token = _json_failure.set(document if enabled else None)
    try:
        yield
    finally:
        _json_failure.reset(token)


def fail(message: str, code: int = EXIT_BAD_INPUT) -> NoReturn:
    """One line on stderr and an exit code; plain echo so nothing wraps the line."""
    document = _json_failure.get()
    if document is not None:
        typer.echo(json.dumps(jsonable({**document, "error": message}), indent=2))
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code)


@contextmanager
def ctrl_c_before_solving() -> Iterator[None]:
    """Reading the input and loading the solvers (imports, weights: a second or more) come
    before the solve; a Ctrl-C meanwhile says so and exits 130, as one during the solve
    does (typer alone exits 130 without a word); under ``--json`` the document says
    ``"interrupted": true``."""
    try:
        yield
    except KeyboardInterrupt:
        document = _json_failure.get()
        with json_failures(document is not None, **{**(document or {}), "interrupted": True}):
            fail(INTERRUPTED_LOADING, EXIT_INTERRUPTED)


@contextmanager
def first_ctrl_c_cancels() -> Iterator[threading.Event]:
    """While solving: the first Ctrl-C sets the event a solver's Budget watches, so the solver
    stops within a moment and hands back its best solution so far (as a cancelled API job
    does); a second Ctrl-C stops at once. A plain KeyboardInterrupt could not stop OR-Tools,
    whose search runs in C++ and swallows exceptions raised in its callbacks (a 60 s solve
    ran on after Ctrl-C), and it threw away the best solution of every solver."""
    cancel = threading.Event()
    if threading.current_thread() is not threading.main_thread():
        yield cancel  # signal handlers belong to the main thread; nothing to install
        return

    def on_sigint(signum: int, frame: Any) -> None:
        if cancel.is_set():
            raise KeyboardInterrupt
        cancel.set()
        typer.echo("interrupted: stopping the solver and keeping its best solution so far "
                   "(Ctrl-C again to quit at once)", err=True)

    previous = signal.signal(signal.SIGINT, on_sigint)
    try:
        yield cancel
    finally:
        signal.signal(signal.SIGINT, previous)


def check_parent_folder(option: str, path: Path) -> None:
    """Make the folder ``path`` is to be written into (with its parents), before any time is
    spent; fail naming the option when it cannot be: a file in the way is named as a file."""
    make_folder(option, path.parent if str(path.parent) else Path("."))


def make_folder(option: str, folder: Path) -> None:
    """``folder`` and its parents, made as ``mkdir -p`` would; a file on the way, or a
    folder that cannot be made, fails naming ``option``."""
    if folder.is_dir():
        return
    blocking = next((p for p in (folder, *folder.parents) if p.exists()), None)
    if blocking is not None and not blocking.is_dir():
        fail(f"{option}: {blocking} is a file, not a folder")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        fail(f"{option}: cannot create folder {folder}: {exc.strerror or exc}")


#: The longest ``--time-limit`` the CLI takes: 30 days. The API has its own, smaller bounds;
#: without one, OR-Tools failed on 1e30 s (its protobuf duration overflowed) and 1e12 s
#: was a run nobody would wait for.
MAX_TIME_LIMIT = 30 * 24 * 3600.0


def check_time_limit(time_limit: float) -> None:
    """``--time-limit`` must be a positive number of seconds, at most ``MAX_TIME_LIMIT``."""
    if not (math.isfinite(time_limit) and time_limit > 0):
        fail(f"--time-limit: must be a positive number of seconds, got {time_limit:g}")
    if time_limit > MAX_TIME_LIMIT:
        # every digit of what was given (``:g`` printed 2,592,001 as 2.592e+06, the limit)
        got = (f"{time_limit:,.6f}".rstrip("0").rstrip(".") if time_limit < 1e15
               else f"{time_limit:g}")
        fail(f"--time-limit: at most {MAX_TIME_LIMIT:,.0f} s (30 days), got {got}")


#: The torch device option of the routing commands and the batch (the service reads the same
#: variable).
DEVICE_OPTION = typer.Option(
    help="torch device of reld and polynet (sil decodes on the CPU): cpu, cuda, cuda:N, or auto "
    "(the GPU when torch sees one); the classical solvers ignore it.", envvar="COSOLVE_DEVICE")


def check_budget(time_limit: float, seed: int, device: str = "cpu") -> Budget:
    """The options every solving command shares, checked (exit 2 naming the option): a time
    limit, a seed in range, and a torch device that exists here (``auto`` resolved)."""
    check_time_limit(time_limit)
    if not 0 <= seed <= MAX_SEED:
        fail(f"--seed: must be an integer in [0, {MAX_SEED}], got {seed}")
    return Budget(time_limit=time_limit, seed=seed, device=check_device(device))


def check_device(device: str) -> str:
    """``--device`` (or COSOLVE_DEVICE) resolved to a torch device that exists here; exit 2
    naming both otherwise (the value may come from either)."""
    try:
        return torch_device_name(device)
    except ValueError as exc:
        fail(f"--device (or COSOLVE_DEVICE): {exc}")


def with_fleet(instance: Instance, max_vehicles: int | None) -> Instance:
    """``--max-vehicles`` as an instance's fleet cap (checked as a file's VEHICLES is); an
    ``InstanceError`` naming the option when it is a TSP or the cap is not a valid fleet for
    it (``cosolve batch`` makes it the file's reason, the other commands exit 2 with it)."""
    if max_vehicles is None:
        return instance
    if not isinstance(instance, CVRPInstance):
        raise InstanceError("--max-vehicles", "applies to CVRP and CVRPTW instances; a TSP has "
                            "one vehicle")
    try:
        return instance.with_fleet(max_vehicles)
    except InstanceError as exc:
        raise InstanceError("--max-vehicles", exc.message) from None


def comma_names(text: str, option: str, *, what: str = "", repeats: bool = False,
                empty: str = "give at least one value") -> list[str]:
    """The comma-separated names of ``option``, in order, once each. Unless ``repeats``, a
    name given twice is a mistake (a comparison would run it once), as the HTTP API says."""
    names: list[str] = []
    for part in text.split(","):
        name = part.strip()
        if not name:
            continue
        if name in names:
            if not repeats:
                fail(f"{option}: {what + ' ' if what else ''}{name!r} is listed twice")
            continue
        names.append(name)
    if not names:
        fail(f"{option}: {empty}")
    return names


def solver_names(text: str, example: str) -> list[str]:
    """The names in a comma-separated ``--solvers``."""
    return comma_names(text, "--solvers", what="solver",
                       empty=f"give at least one solver name, e.g. --solvers {example}")


#: How a solver family is named in messages.
FAMILY_NAMES = {"routing": "routing", "flow": "min-cost flow"}


def family_solvers(family: str) -> list[str]:
    """The names of the registered solvers of ``family`` (``routing``, ``flow``)."""
    return [s.name for s in all_specs() if s.family == family]


def unknown_solver_message(name: str, family: str) -> str:
    """An unknown solver's message listing only the solvers of ``family`` (not the routing
    solvers for ``flow solve``, nor the min-cost flow ones for ``batch``)."""
    known = ", ".join(family_solvers(family))
    return (f"unknown solver {name!r}; the {FAMILY_NAMES.get(family, family)} solvers: "
            f"{known} (`cosolve solvers`)")


def stdout_console() -> Console:
    console = Console()
    if not console.is_terminal and "COLUMNS" not in os.environ:
        console = Console(width=PIPE_WIDTH)
    return console


def jsonable(obj: Any) -> Any:
    """Plain JSON: NaN/inf become null and numpy scalars become Python numbers."""
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [jsonable(v) for v in obj]
    if hasattr(obj, "item") and not isinstance(obj, (str, bytes)):
        obj = obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def load_or_fail(path: Path, loader: Callable[[Path], T], what: str = "instance") -> T:
    """Read a file with ``loader``, turning every way it can be wrong into one line."""
    try:
        return loader(path)
    except FileNotFoundError:
        fail(f"FILE: no such file: {path}")
    except IsADirectoryError:
        fail(f"FILE: {path} is a directory, not {'an' if what[:1] in 'aeiou' else 'a'} {what} file")
    except PermissionError:
        fail(f"FILE: permission denied: {path}")
    except InstanceError as exc:
        fail(f"{path}: {exc.field}: {exc.message}")
    except OSError as exc:
        fail(f"FILE: cannot read {path}: {exc.strerror or exc}")


def check_not_the_input(out: Path | None, file: Path, option: str = "--out") -> None:
    """Refuse an output path that is the input file itself: the solve would overwrite the
    instance it read (`solve self.json --out self.json` would replace the instance)."""
    if out is None:
        return
    try:
        same = out.exists() and file.exists() and out.resolve().samefile(file.resolve())
    except OSError:
        same = False
    if same:
        fail(f"{option}: {out} is the input file; write the result elsewhere")
