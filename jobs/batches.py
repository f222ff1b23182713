"""What a batch of instance files needs, whether it came as an HTTP upload or a folder for
`cosolve batch`: archives expanded within a budget, the names results go by, the known
solution that comes with each file, the solution files written from a stored answer, and the
summary table.

The HTTP batch (``app.routers.jobs``) and the CLI's (``cli.batch``) read it here, so both
name, match and tabulate files the same way.
"""

from __future__ import annotations

import dataclasses
import io
import logging
import lzma
import stat
import tarfile
import zipfile
import zlib
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from jobs.service import JobInput
from solvers.catalog import get_spec
from solvers.errors import CosolveError, InstanceError
from solvers.routing.auto import AUTO
from solvers.routing.io.formats import parse_instance_bytes
from solvers.routing.io.references import (
    reference_cost_bytes,
    reference_file_names,
    reference_stem,
)
from solvers.routing.io.solutions import sol_text_for, tour_text_for

logger = logging.getLogger("cosolve.api")

#: An upload with one of these endings is read as an archive of instance files.
ARCHIVE_SUFFIXES = (".zip", ".tar", ".tar.gz", ".tgz")
#: The instance files a batch reads, each optionally gzipped.
INSTANCE_SUFFIXES = (".tsp", ".vrp", ".vrptw", ".json")


class BatchTooLargeError(CosolveError):
    """A batch would hold more files than one batch may."""

    status = 413
    kind = "batch-too-large"
    title = "Too many files"
    exit_code = 2
    field = "files"

    def __init__(self, filename: str, files: int, limit: int) -> None:
        super().__init__(f"{filename}: the batch would hold {files} files or more; a batch "
                         f"holds at most {limit} (COSOLVE_MAX_BATCH_FILES): split it")
        self.files = files
        self.limit = limit

    def problem_extra(self) -> dict[str, Any]:
        return {"files": self.files, "limit": self.limit}


# -- names ---------------------------------------------------------------------------------
def result_stem(filename: str) -> str:
    """The name a file's results go by: ``kroA100.tsp.gz`` -> ``kroA100``, and a capped
    copy's ``tiny8.vrp.json`` -> ``tiny8`` (as the CLI's batch names its outputs), so two
    files whose results would share a name are told apart at submission, and a download is
    named after its file (``a.b.tsp`` gave ``a.tour``)."""
    name = filename[:-3] if filename.lower().endswith(".gz") else filename
    stem, dot, suffix = name.rpartition(".")
    if not dot:
        return name
    if suffix.lower() == "json" and stem.lower().endswith((".tsp", ".vrp", ".vrptw")):
        stem = stem.rpartition(".")[0]  # the capped copy of an uploaded file
    return stem


def output_stem(filename: str) -> str:
    """``kroA100.tsp.gz`` -> ``kroA100``: the name every output of a folder's file is built
    on in `cosolve batch`."""
    base = filename[:-3] if filename.lower().endswith(".gz") else filename
    return Path(base).stem


def is_instance_name(filename: str) -> bool:
    """A name a folder's batch picks up: .tsp, .vrp, .vrptw or .json, optionally gzipped; no
    hidden files."""
    if filename.startswith("."):
        return False
    base = filename[:-3] if filename.lower().endswith(".gz") else filename
    return base.lower().endswith(INSTANCE_SUFFIXES)


# -- archives ----------------------------------------------------------------------------
_PAST_BUDGET = ("not read: the batch's files expand past {} bytes in all "
                "(COSOLVE_MAX_DECOMPRESSED_BYTES); send it in another batch")


class ReadBudget:
    """What one batch request may read in all: its files' text (archive members and .gz
    files at what they expand to) and its file count. One budget for the whole request, not
    one per archive, and .gz members counted as expanded: otherwise two archives could read
    600 MiB into memory before being refused."""

    def __init__(self, max_bytes: int, max_files: int) -> None:
        self.bytes_left = max_bytes
        self.max_bytes = max_bytes
        self.max_files = max_files
        self.files = 0

    def count_files(self, more: int, filename: str) -> None:
        """Refused before anything is read when the files would exceed the batch's count."""
        self.files += more
        if self.files > self.max_files:
            raise BatchTooLargeError(filename, self.files, self.max_files)

    def take(self, size: int) -> bool:
        """Reserve ``size`` bytes of text; False (nothing reserved) when they do not fit."""
        if size > self.bytes_left:
            return False
        self.bytes_left -= size
        return True


def _expanded_size(name: str, blob: bytes, limit: int) -> int | None:
    """The bytes a .gz file expands to, counted in chunks without keeping them (None above
    ``limit`` or when the data are not gzip); other files: their own size."""
    if not name.lower().endswith(".gz"):
        return len(blob)
    inflater = zlib.decompressobj(wbits=47)  # gzip or zlib header
    total = 0
    data = blob
    try:
        while data:
            chunk = inflater.decompress(data, 1 << 20)
            total += len(chunk)
            if total > limit:
                return None
            data = inflater.unconsumed_tail
            if inflater.eof:
                break
    except zlib.error:
        return len(blob)  # not gzip data: its reader says so, as a rejection of that file
    return total


def _not_an_instance(name: str) -> str | None:
    """Why an archive member is not read as an instance (None: it is read)."""
    base = name.rstrip("/").rsplit("/", 1)[-1]
    if name.startswith("__MACOSX/") or base.startswith("._"):
        return "a macOS resource fork (__MACOSX/, ._name), not an instance; not read"
    if base.startswith("."):
        return "a hidden file (its name starts with '.'); not read"
    return None


def expand_upload(filename: str, data: bytes, budget: ReadBudget,
            skipped: list[dict[str, Any]]) -> list[tuple[str, bytes]]:
    """Instance files of one upload: itself, or the members of a .zip/.tar archive. What is
    not read is listed in ``skipped`` with the reason, one entry per file (links, special
    files, hidden files, members past the request's budget, an unreadable archive), so
    nothing of the upload goes unaccounted and one corrupt archive does not sink the whole
    request."""
    lower = filename.lower()
    if not lower.endswith(ARCHIVE_SUFFIXES):
        budget.count_files(1, filename)
        return _within_budget([(filename, data)], budget, skipped)
    try:
        if lower.endswith(".zip"):
            return _zip_members(filename, data, budget, skipped)
        return _tar_members(filename, data, budget, skipped)
    except (zipfile.BadZipFile, tarfile.TarError, EOFError, OSError, zlib.error,
            lzma.LZMAError, NotImplementedError, RuntimeError) as exc:
        # corrupt compressed data (zlib, lzma), an unsupported zip method, an encrypted member
        skipped.append({"filename": filename, "error": (
            f"not a readable archive ({exc}); none of its files were read")})
        return []


def _within_budget(files: list[tuple[str, bytes]], budget: ReadBudget,
                   skipped: list[dict[str, Any]]) -> list[tuple[str, bytes]]:
    """The files whose text fits what is left of the request's budget (.gz counted as
    expanded); each one past it is listed with the reason."""
    kept = []
    for name, blob in files:
        size = _expanded_size(name, blob, budget.bytes_left)
        if size is None or not budget.take(size):
            skipped.append({"filename": name, "error": _PAST_BUDGET.format(budget.max_bytes)})
            continue
        kept.append((name, blob))
    return kept


def _zip_members(filename: str, data: bytes, budget: ReadBudget,
                 skipped: list[dict[str, Any]]) -> list[tuple[str, bytes]]:
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        infos = []
        for info in zf.infolist():
            if info.is_dir():
                continue
            mode = info.external_attr >> 16  # Unix mode bits, 0 when not recorded
            reason = _not_an_instance(info.filename)
            if stat.S_IFMT(mode) and not stat.S_ISREG(mode):
                # a zip's symlink holds its target path as text, which would be parsed as
                # an instance: left out like a tar's links
                kind = "a link" if stat.S_ISLNK(mode) else "not a regular file"
                reason = f"{kind} in the archive; only regular files are read"
            if reason is not None:
                skipped.append({"filename": info.filename, "error": reason})
                continue
            infos.append(info)
        budget.count_files(len(infos), filename)  # before any member is read
        members = []
        for info in infos:
            if info.file_size > budget.bytes_left:  # its declared size, before reading it
                skipped.append({"filename": info.filename, "error": _PAST_BUDGET.format(
                    budget.max_bytes)})
                continue
            blob, reason = _read_member(zf, info, budget)
            if blob is None:
                skipped.append({"filename": info.filename, "error": reason})
                continue
            members += _within_budget([(info.filename, blob)], budget, skipped)
        return members


#: How much of an archive member is inflated at a time.
_CHUNK = 1 << 20
#: The zip methods whose inflation a read's size bounds (bzip2 and LZMA members inflate a
#: whole compressed block per read, which a few kilobytes can make gigabytes).
_BOUNDED_METHODS = {zipfile.ZIP_STORED: "stored", zipfile.ZIP_DEFLATED: "deflate"}


def _read_member(zf: zipfile.ZipFile, info: zipfile.ZipInfo, budget: ReadBudget
                 ) -> tuple[bytes | None, str]:
    """A zip member's bytes, inflated a chunk at a time and counted as they come against
    what is left of the request's budget: its declared size is the sender's word (three
    members declaring 100 bytes each inflated 900 MiB into memory when read whole). None
    and the reason when it is past the budget or its data are damaged."""
    if info.compress_type not in _BOUNDED_METHODS:
        return None, (f"compressed with zip method {info.compress_type}, which is not read; "
                      "zip it with deflate (the default) or store it")
    chunks: list[bytes] = []
    total = 0
    try:
        with zf.open(info) as fh:
            while chunk := fh.read(_CHUNK):
                total += len(chunk)
                if total > budget.bytes_left:
                    return None, _PAST_BUDGET.format(budget.max_bytes)
                chunks.append(chunk)
    except (zipfile.BadZipFile, EOFError, zlib.error, OSError) as exc:
        # a CRC that does not match: its data are not what its header declares
        return None, f"damaged in the archive ({exc}); not read"
    return b"".join(chunks), ""


def _tar_members(filename: str, data: bytes, budget: ReadBudget,
                 skipped: list[dict[str, Any]]) -> list[tuple[str, bytes]]:
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:*") as tf:
        regular = []
        for member in tf.getmembers():
            if member.isdir():
                continue
            reason = _not_an_instance(member.name)
            if not member.isfile():
                # say what was left out, and why
                kind = "a link" if member.issym() or member.islnk() else "not a regular file"
                reason = f"{kind} in the archive; only regular files are read"
            if reason is not None:
                skipped.append({"filename": member.name, "error": reason})
                continue
            regular.append(member)
        budget.count_files(len(regular), filename)
        members = []
        for member in regular:
            if member.size > budget.bytes_left:
                skipped.append({"filename": member.name, "error": _PAST_BUDGET.format(
                    budget.max_bytes)})
                continue
            fh = tf.extractfile(member)
            if fh is not None:
                members += _within_budget([(member.name, fh.read())], budget, skipped)
        return members


# -- known solutions -----------------------------------------------------------------------
def upload_path(filename: str) -> str:
    """An upload's name as a path with '/' between folders (a Windows zip writes '\\')."""
    return filename.replace("\\", "/")


def _folder_and_name(filename: str) -> tuple[str, str]:
    folder, _, name = upload_path(filename).rpartition("/")
    return folder, name


def _reference_place(filename: str) -> tuple[str, str]:
    """A known solution's folder and name with its extensions in lower case (``X.SOL`` is
    ``X.sol``), as ``reference_file_names`` writes the names an instance's may have."""
    folder, name = _folder_and_name(filename)
    stem = reference_stem(name) or name
    return folder, stem + name[len(stem):].lower()


def attach_references(accepted: list[JobInput], names: list[str],
                      known: list[tuple[str, bytes]], unread: list[str],
                      rejected: list[dict[str, Any]], max_bytes: int) -> list[JobInput]:
    """The accepted jobs, each with the cost of its known solution uploaded beside it (the
    CLI's rule: ``X-n101-k25.vrp`` <- ``X-n101-k25.sol``, ``kroA100.tsp.gz`` <-
    ``kroA100.opt.tour``, in the same folder of an archive) once checked as a feasible solution
    of what the job solves, so a batch reports gaps to checked numbers only. A known solution
    that serves no instance (none of its name, its instance among the ``unread`` files
    rejected, or not a feasible solution of it) is listed in ``rejected`` with the reason;
    nothing uploaded goes unaccounted."""
    by_place: dict[tuple[str, str], int] = {}
    used: set[int] = set()
    for i, (filename, _) in enumerate(known):
        place = _reference_place(filename)
        if place in by_place:  # two parts named X.sol, or X.sol beside and inside a zip
            used.add(i)
            rejected.append({"filename": filename, "error": (
                f"another known solution of the batch has the same name "
                f"({known[by_place[place]][0]}); not read")})
            continue
        by_place[place] = i
    out = []
    for job_input, name in zip(accepted, names, strict=True):
        folder, base = _folder_and_name(name)
        candidates = [by_place[(folder, c)] for c in reference_file_names(base)
                      if (folder, c) in by_place]
        instance = None
        for i in candidates:
            ref_name, ref_data = known[i]
            used.add(i)
            if job_input.reference is not None:
                rejected.append({"filename": ref_name, "error": (
                    f"another known solution of {name} ({job_input.reference_file}) is its "
                    "reference; not read")})
                continue
            try:
                if instance is None:  # what the job solves: its fleet cap applied
                    instance = parse_instance_bytes(job_input.data, job_input.filename,
                                                    max_bytes=max_bytes)
                cost = reference_cost_bytes(ref_data, _folder_and_name(ref_name)[1], instance,
                                            max_bytes=max_bytes)
            except CosolveError as exc:
                reason = exc.message if isinstance(exc, InstanceError) else str(exc)
                rejected.append({"filename": ref_name,
                                 "error": f"not used as the reference of {name}: {reason}"})
                continue
            except Exception:  # one unreadable solution must not sink the batch
                logger.exception("unexpected error checking known solution %r", ref_name)
                rejected.append({"filename": ref_name, "error": (
                    f"not used as the reference of {name}: the server could not check it "
                    "(the error was logged)")})
                continue
            job_input = dataclasses.replace(job_input, reference=cost, reference_file=ref_name)
        out.append(job_input)
    for i, (ref_name, _) in enumerate(known):
        if i in used:
            continue
        folder, base = _reference_place(ref_name)
        owner = next((f for f in unread if _folder_and_name(f)[0] == folder
                      and base in reference_file_names(_folder_and_name(f)[1])), None)
        stem = f"{folder}/{reference_stem(base)}" if folder else reference_stem(base)
        rejected.append({"filename": ref_name, "error": (
            f"the known solution of {owner}, which is rejected; not read" if owner else
            f"a known solution with no instance named {stem}.* in the batch; not read")})
    return out


# -- solution files --------------------------------------------------------------------
def tour_text(payload: dict[str, Any], cost: float) -> str:
    """A stored TSP answer as a TSPLIB .tour, its nodes under the file's own labels."""
    labels = (payload.get("route_ids") or [[v + 1 for v in payload["routes"][0]]])[0]
    return tour_text_for(payload["instance"], labels, cost, payload["distance"],
                         payload["solver"], indices=payload["routes"][0])


def sol_text(payload: dict[str, Any], cost: float) -> str:
    """A stored CVRP or CVRPTW answer as a CVRPLIB .sol."""
    return sol_text_for(payload["routes"], cost, payload.get("depot", 0))


# -- summary -------------------------------------------------------------------------------
#: A batch summary's columns; ``TIME`` is the caller's (the CLI's "time (s)", the API's
#: "wall (s)"), and ``GAP_COLUMN`` comes in when a file has a known solution.
COLUMNS = ("file", "nodes", "state", "cost", "feasible", "TIME", "error")
GAP_COLUMN = "gap to ref."
#: The columns of numbers, right-aligned.
_NUMBER_COLUMNS = {"nodes", "cost", GAP_COLUMN, "time (s)", "wall (s)"}


def summary_columns(gaps: bool, time_column: str) -> tuple[str, ...]:
    """The summary's columns, with the gap to the known solutions when ``gaps``."""
    columns = (*COLUMNS[:4], GAP_COLUMN, *COLUMNS[4:]) if gaps else COLUMNS
    return tuple(time_column if c == "TIME" else c for c in columns)


def gap_text(gap: float | None) -> str:
    """A gap to a known solution as both summaries write it."""
    return "–" if gap is None else f"{gap:+.3f} %"


def markdown_table(columns: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
    """The lines of a markdown table whose cells are already escaped; numbers right-aligned."""
    return ["| " + " | ".join(columns) + " |",
            "|" + "|".join("---:" if c in _NUMBER_COLUMNS else "---" for c in columns) + "|",
            *("| " + " | ".join(row) + " |" for row in rows)]


# -- solvers and totals per problem kind --------------------------------------------------
#: The problem kinds a batch may mix, in the order totals list them.
BATCH_PROBLEMS = ("tsp", "cvrp", "cvrptw")


class BatchSolverError(CosolveError):
    """A batch's ``solver`` that cannot be read: a per-problem form naming an unknown
    problem, one problem twice, or a solver that does not solve the problem it is given."""

    status = 422
    kind = "invalid-solver"
    title = "Invalid solver choice"
    exit_code = 2
    field = "solver"


@dataclasses.dataclass(frozen=True)
class BatchSolvers:
    """The solver for each problem kind of a batch: one name for every file (``ils``,
    ``auto``), or one per kind (``tsp=ils,cvrp=pyvrp,cvrptw=auto``); a kind the per-kind form
    leaves out has none, and its files are rejected saying so."""

    text: str
    default: str | None
    by_problem: dict[str, str] = dataclasses.field(default_factory=dict)

    @property
    def names(self) -> list[str]:
        """Every solver named, once each, in the order given."""
        return list(dict.fromkeys([self.default] if self.default else self.by_problem.values()))

    def for_problem(self, problem: str) -> str | None:
        return self.default if self.default is not None else self.by_problem.get(problem)

    def missing(self, problem: str) -> str:
        """Why a file of ``problem`` has no solver in this batch."""
        given = ", ".join(self.by_problem)
        return (f"the batch's solver ({self.text}) names none for {problem.upper()} files "
                f"(it names {given}); add {problem}=NAME or use auto")


def parse_batch_solvers(text: str) -> BatchSolvers:
    """``ils``, ``auto`` or ``tsp=ils,cvrp=pyvrp``; a per-kind name is checked against its
    kind here (UnknownSolverError for a name nobody registered), a single name is left to the
    caller's checks (it may be any routing solver)."""
    text = text.strip()
    if "=" not in text:
        return BatchSolvers(text, text)
    by_problem: dict[str, str] = {}
    for part in (p.strip() for p in text.split(",")):
        problem, eq, name = (s.strip() for s in part.partition("="))
        problem = problem.lower()
        if not eq or not name or not problem:
            raise BatchSolverError(f"cannot read {part!r} in {text!r}: write one solver for "
                                   "every file (ils, auto) or PROBLEM=SOLVER pairs separated "
                                   "by commas (tsp=ils,cvrp=pyvrp,cvrptw=pyvrp)")
        if problem not in BATCH_PROBLEMS:
            raise BatchSolverError(f"unknown problem {problem!r} in {text!r}; a batch's "
                                   f"problems: {', '.join(BATCH_PROBLEMS)}")
        if problem in by_problem:
            raise BatchSolverError(f"{problem} is given twice in {text!r}")
        if name != AUTO and problem not in get_spec(name).problems:
            raise BatchSolverError(f"solver {name!r} does not solve {problem} (it solves: "
                                   f"{', '.join(get_spec(name).problems)})")
        by_problem[problem] = name
    return BatchSolvers(",".join(f"{p}={n}" for p, n in by_problem.items()), None, by_problem)


def kind_totals(results: Iterable[tuple[str | None, float | None, float | None]],
                ) -> dict[str, dict[str, Any]]:
    """Totals per problem kind from (problem, cost of a feasible solution or None, gap to
    the known solution or None) per file: files, solved, total_cost, with_reference and
    mean_gap_percent. A TSP's length and a CVRP's cost are never summed together."""
    out: dict[str, dict[str, Any]] = {}
    for problem, cost, gap in results:
        if problem is None:  # a file that could not be read has no kind
            continue
        kind = out.setdefault(problem, {"files": 0, "solved": 0, "total_cost": None,
                                        "with_reference": 0, "mean_gap_percent": None,
                                        "_gaps": []})
        kind["files"] += 1
        if cost is not None:
            kind["solved"] += 1
            kind["total_cost"] = (kind["total_cost"] or 0.0) + cost
        if gap is not None:
            kind["_gaps"].append(gap)
    for kind in out.values():
        gaps = kind.pop("_gaps")
        kind["with_reference"] = len(gaps)
        kind["mean_gap_percent"] = sum(gaps) / len(gaps) if gaps else None
    return {p: out[p] for p in BATCH_PROBLEMS if p in out}


def overall_cost(by_kind: dict[str, dict[str, Any]]) -> float | None:
    """The batch's total cost: the solved files' sum when they are all of one kind, else None
    (the per-kind totals carry the sums)."""
    solved = [k for k in by_kind.values() if k["solved"]]
    return solved[0]["total_cost"] if len(solved) == 1 else None


def kind_totals_text(by_kind: dict[str, dict[str, Any]], number: Any) -> str:
    """"TSP 1,234 (2 solved), CVRP 5,678 (1 solved)": the totals line of a mixed batch;
    ``number`` formats a cost."""
    return ", ".join(f"{p.upper()} {number(k['total_cost'])} ({k['solved']} solved)"
                     for p, k in by_kind.items())
