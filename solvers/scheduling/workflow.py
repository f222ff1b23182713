"""Workflow DAGs: the tasks, their runtimes and dependencies, loaders and generators.

A ``Workflow`` is immutable and validated once (no cycle, no unknown parent, finite runtimes
≥ 0), so the simulator and the policies can trust it and precompute what they need per
template: a topological order, the descendant workload, the remaining critical path and the
upward rank. Runtimes are the DAX reference runtimes in seconds; the simulator turns them into
work (``runtime × SIZE_FACTOR`` vCPU-seconds), as GOODRL's simulator does.

Loaders read Pegasus DAX XML (the classic Bharathi et al. workflows) and WfCommons JSON (schema
1.4 ``workflow.tasks`` and 1.5 ``workflow.specification`` + ``workflow.execution``); our own
compact JSON ``{"name", "tasks": [{"id", "runtime", "parents"}]}`` is the 1.4 shape. The
generators build Montage, CyberShake, Inspiral (LIGO) and SIPHT shapes at any size, with the
per-stage runtimes measured on the shipped DAX files and ±20 % noise.
"""

from __future__ import annotations

import contextlib
import math
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from solvers.errors import InstanceError, UnsupportedFormatError
from solvers.inflate import gunzip
from solvers.routing.io.documents import load_json
from solvers.routing.io.formats import read_file_bytes

#: DAX runtime × SIZE_FACTOR = work in vCPU-seconds (GOODRL multiplies by 16).
SIZE_FACTOR = 16.0
#: The most tasks one workflow may have; keeps every per-workflow array small.
MAX_TASKS = 5_000
#: A task's runtime at most (seconds, about 30 years): larger ones overflow the simulator's
#: float arithmetic (1e308 s made every flowtime inf, reported as null).
MAX_RUNTIME = 1e9
#: The most dependencies one workflow may have (building one costs about 6 µs per edge).
MAX_EDGES = 200_000
WORKFLOW_EXTENSIONS = (".xml", ".dax", ".json")


@dataclass(frozen=True, eq=False)
class Workflow:
    """A validated DAG of tasks. Index ``i`` is the task; ``ids[i]`` its name in the file."""

    name: str
    ids: tuple[str, ...]
    runtimes: np.ndarray  # float64 [n], reference seconds
    parents: tuple[tuple[int, ...], ...]
    output_bytes: np.ndarray = field(default_factory=lambda: np.zeros(0))  # data produced
    kinds: tuple[str, ...] = ()
    # derived, filled by __post_init__
    children: tuple[tuple[int, ...], ...] = ()
    order: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    n_parents: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    sizes: np.ndarray = field(default_factory=lambda: np.zeros(0))
    descendant_work: np.ndarray = field(default_factory=lambda: np.zeros(0))
    tail_path: np.ndarray = field(default_factory=lambda: np.zeros(0))
    roots: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        n = len(self.ids)
        runtimes = np.asarray(self.runtimes, dtype=np.float64)
        object.__setattr__(self, "runtimes", runtimes)
        if len(self.output_bytes) != n:
            object.__setattr__(self, "output_bytes", np.zeros(n))
        if len(self.kinds) != n:
            object.__setattr__(self, "kinds", tuple("task" for _ in range(n)))
        children: list[list[int]] = [[] for _ in range(n)]
        for child, ps in enumerate(self.parents):
            for p in ps:
                children[p].append(child)
        object.__setattr__(self, "children", tuple(tuple(c) for c in children))
        object.__setattr__(self, "order", _topological_order(self))
        object.__setattr__(self, "n_parents",
                           np.array([len(p) for p in self.parents], dtype=np.int64))
        sizes = runtimes * SIZE_FACTOR
        object.__setattr__(self, "sizes", sizes)
        # tail_path[i]: the longest chain of work strictly after i (the critical path to the
        # exit, in vCPU-seconds); descendant_work[i]: all work reachable from i, i excluded.
        # Reachability as packed bit rows (n²/8 bytes: 3 MB at 5,000 tasks), not Python sets,
        # so a dense DAG costs memory bandwidth rather than gigabytes.
        tail = np.zeros(n)
        reach = np.zeros((n, (n + 7) // 8), np.uint8)
        for i in self.order[::-1].tolist():
            for c in children[i]:
                tail[i] = max(tail[i], sizes[c] + tail[c])
                reach[i] |= reach[c]
                reach[i, c >> 3] |= np.uint8(0x80 >> (c & 7))
        object.__setattr__(self, "tail_path", tail)
        work = np.zeros(n)
        for lo in range(0, n, 512):
            work[lo:lo + 512] = np.unpackbits(reach[lo:lo + 512], axis=1, count=n) @ sizes
        object.__setattr__(self, "descendant_work", work)
        object.__setattr__(self, "roots", tuple(i for i in range(n) if not self.parents[i]))

    @property
    def n(self) -> int:
        return len(self.ids)

    @property
    def edges(self) -> int:
        return sum(len(p) for p in self.parents)

    def critical_path(self, speed: float = 1.0) -> float:
        """Seconds the longest chain takes on a VM of ``speed`` vCPUs (a flowtime lower
        bound when ``speed`` is the fastest VM)."""
        return float((self.sizes + self.tail_path).max(initial=0.0)) / speed

    def upward_rank(self, mean_speed: float) -> np.ndarray:
        """HEFT's upward rank with mean execution times (no communication is modelled)."""
        return (self.sizes + self.tail_path) / mean_speed

    def describe(self) -> dict[str, Any]:
        # both in the file's runtime seconds (a 16-vCPU VM), so the two compare: not the
        # critical path at 1 vCPU, 16× total_runtime's unit
        return {"name": self.name, "tasks": self.n, "edges": self.edges,
                "total_runtime": float(self.runtimes.sum()),
                "critical_path": self.critical_path(SIZE_FACTOR)}

    def to_dict(self) -> dict[str, Any]:
        """The compact JSON form that ``workflow_from_dict`` reads back."""
        return {"name": self.name, "tasks": [
            {"id": self.ids[i], "runtime": float(self.runtimes[i]),
             "parents": [self.ids[p] for p in self.parents[i]]} for i in range(self.n)]}


def _topological_order(wf: Workflow) -> np.ndarray:
    """Kahn's algorithm; a cycle is an InstanceError naming the tasks on it."""
    n = len(wf.ids)
    indeg = [len(p) for p in wf.parents]
    stack = [i for i in range(n) if indeg[i] == 0][::-1]
    order: list[int] = []
    while stack:
        i = stack.pop()
        order.append(i)
        for c in wf.children[i]:
            indeg[c] -= 1
            if indeg[c] == 0:
                stack.append(c)
    if len(order) < n:
        left = {i for i in range(n) if indeg[i] > 0}
        cycle = _find_cycle(wf, left)
        raise InstanceError("tasks", "the dependencies form a cycle: "
                            + " -> ".join(wf.ids[i] for i in cycle))
    return np.array(order, dtype=np.int64)


def _find_cycle(wf: Workflow, left: set[int]) -> list[int]:
    start = min(left)
    seen: dict[int, int] = {}
    path: list[int] = []
    node = start
    while node not in seen:  # every node left has a parent left, so walking parents loops
        seen[node] = len(path)
        path.append(node)
        node = next(p for p in wf.parents[node] if p in left)
    cycle = [*path[seen[node]:], node]
    return cycle[::-1]


#: Longest task id, as ``TaskIn.id`` in the API's schema.
MAX_ID_LENGTH = 200


def build_workflow(name: str, ids: Sequence[str], runtimes: Sequence[float],
                   parents: Sequence[Sequence[str]], *, output_bytes: Sequence[float] | None = None,
                   kinds: Sequence[str] | None = None, where: str = "tasks") -> Workflow:
    """Check names, runtimes and parents, then build the Workflow (which checks for cycles).
    Fields in errors are ``tasks[i].runtime`` / ``tasks[i].parents``."""
    n = len(ids)
    if n == 0:
        raise InstanceError(where, "the workflow has no tasks")
    if n > MAX_TASKS:
        raise InstanceError(where, f"the workflow has {n} tasks; at most {MAX_TASKS} are "
                            "supported")
    index: dict[str, int] = {}
    for i, tid in enumerate(ids):
        if not isinstance(tid, str) or not tid:
            raise InstanceError(f"{where}[{i}].id", "each task needs a non-empty string id")
        if len(tid) > MAX_ID_LENGTH:
            # as inline JSON tasks are capped (a DAX or WfCommons file's ids were not: every
            # session answer and Gantt label repeats them)
            raise InstanceError(f"{where}[{i}].id", f"task ids have at most {MAX_ID_LENGTH} "
                                f"characters, got {len(tid)}: {_shown(tid)}")
        if tid in index:
            raise InstanceError(f"{where}[{i}].id", f"duplicate task id {tid!r}")
        index[tid] = i
    rt = np.array([runtime_seconds(r, f"{where}[{i}].runtime") for i, r in enumerate(runtimes)],
                  dtype=np.float64).reshape(n)
    edges = sum(len(ps) for ps in parents)
    if edges > MAX_EDGES:
        raise InstanceError(where, f"the workflow has {edges} dependencies; at most "
                            f"{MAX_EDGES} are supported")
    par: list[tuple[int, ...]] = []
    for i, ps in enumerate(parents):
        got: list[int] = []
        for j, p in enumerate(ps):
            if not isinstance(p, str):
                raise InstanceError(f"{where}[{i}].parents[{j}]",
                                    f"a parent is named by its task id (a string), got "
                                    f"{_shown(p)}")
            if p not in index:
                raise InstanceError(f"{where}[{i}].parents",
                                    f"task {ids[i]!r} names an unknown parent {p!r}")
            if index[p] == i:
                raise InstanceError(f"{where}[{i}].parents",
                                    f"task {ids[i]!r} lists itself as a parent (a cycle)")
            if index[p] not in got:
                got.append(index[p])
        par.append(tuple(got))
    out = np.asarray(output_bytes if output_bytes is not None else np.zeros(n), dtype=np.float64)
    try:
        return Workflow(name=name, ids=tuple(ids), runtimes=rt, parents=tuple(par),
                        output_bytes=out, kinds=tuple(kinds) if kinds else ())
    except InstanceError as exc:  # a cycle: on the task list as the user wrote it
        raise InstanceError(where, exc.message) from None


def runtime_seconds(value: Any, field: str) -> float:
    """A task's runtime as seconds in [0, MAX_RUNTIME]; anything else is an error on ``field``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InstanceError(field, f"must be a number, got {_shown(value)}")
    try:
        seconds = float(value)
    except OverflowError:  # an integer beyond any float (e.g. 400 digits)
        seconds = math.inf
    if not math.isfinite(seconds) or not 0 <= seconds <= MAX_RUNTIME:
        raise InstanceError(field, f"must be a number of seconds in [0, {MAX_RUNTIME:g}], got "
                            f"{_shown(value)}")
    return seconds


def _shown(value: Any, limit: int = 40) -> str:
    """``repr(value)`` for an error message, cut short (a runtime may have 400 digits)."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text)} characters)"


# -- loaders -------------------------------------------------------------------------------------
def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def parse_dax(data: bytes | str, name: str = "workflow") -> Workflow:
    """A Pegasus DAX (2.x/3.x ``adag``): ``job`` elements with ``runtime`` and ``uses`` sizes,
    ``child``/``parent`` elements for the dependencies."""
    try:
        root = ET.fromstring(data)
    except ET.ParseError as exc:
        raise InstanceError("file", f"not well-formed XML: {exc}") from None
    if _local(root.tag) != "adag":
        raise UnsupportedFormatError("file", f"expected a Pegasus DAX <adag> root, got "
                                     f"<{_local(root.tag)}>")
    ids: list[str] = []
    runtimes: list[float] = []
    out_bytes: list[float] = []
    kinds: list[str] = []
    deps: dict[str, list[str]] = {}
    for el in root:
        tag = _local(el.tag)
        if tag == "job":
            jid = el.get("id") or ""
            i = len(ids)
            ids.append(jid)
            raw = el.get("runtime")
            if raw is None:
                raise InstanceError(f"tasks[{i}].runtime", f"job {jid!r} has no runtime")
            try:
                runtimes.append(float(raw))
            except ValueError:
                raise InstanceError(f"tasks[{i}].runtime",
                                    f"job {jid!r}: runtime {raw!r} is not a number") from None
            kinds.append(el.get("name") or "task")
            size = 0.0
            for use in el:
                if _local(use.tag) == "uses" and use.get("link") == "output":
                    with contextlib.suppress(ValueError):
                        size += float(use.get("size") or 0)
            out_bytes.append(size)
        elif tag == "child":
            ref = el.get("ref") or ""
            deps.setdefault(ref, []).extend(p.get("ref") or "" for p in el
                                            if _local(p.tag) == "parent")
    known = set(ids)
    for child in deps:
        if child not in known:
            raise InstanceError("tasks", f"a <child ref={child!r}> names no job")
    parents = [deps.get(jid, []) for jid in ids]
    return build_workflow(root.get("name") if name == "workflow" and root.get("name") not in
                          (None, "test") else name, ids, runtimes, parents,
                          output_bytes=out_bytes, kinds=kinds)


def workflow_from_dict(obj: Any, name: str = "workflow") -> Workflow:
    """Our compact JSON or a WfCommons instance (schema 1.4 or 1.5)."""
    if not isinstance(obj, dict):
        raise InstanceError("workflow", "expected a JSON object")
    wf = obj.get("workflow")
    label = str(obj.get("name") or name)
    if isinstance(wf, dict) and isinstance(wf.get("specification"), dict):  # WfCommons 1.5
        where = "workflow.specification.tasks"
        spec_tasks = _task_list(wf["specification"].get("tasks"), where)
        runtime_of = _execution_runtimes(wf.get("execution"))
        tasks = []
        for i, t in enumerate(spec_tasks):
            if not isinstance(t, dict):
                raise InstanceError(f"{where}[{i}]", "each task must be an object")
            tid = t.get("id")
            if not isinstance(tid, str) or not tid:
                raise InstanceError(f"{where}[{i}].id", "each task needs a non-empty string id")
            # 1.5 keeps runtimes apart from the tasks: errors name where the runtime is
            runtime, field = runtime_of.get(tid, (None, ""))
            if runtime is None:
                runtime = t.get("runtimeInSeconds", t.get("runtime"))
                field = f"{where}[{i}].runtimeInSeconds"
            if runtime is None:
                raise InstanceError("workflow.execution.tasks",
                                    f"no runtimeInSeconds for task {tid!r} ({where}[{i}])")
            tasks.append({"id": tid, "runtime": runtime_seconds(runtime, field),
                          "parents": t.get("parents", [])})
    elif isinstance(wf, dict):  # WfCommons 1.4 and earlier
        tasks = _task_list(wf.get("tasks", wf.get("jobs")), "workflow.tasks")
        where = "workflow.tasks"
    else:
        tasks = _task_list(obj.get("tasks"), "tasks")
        where = "tasks"
    ids, runtimes, parents = [], [], []
    for i, t in enumerate(tasks):
        if not isinstance(t, dict):
            raise InstanceError(f"{where}[{i}]", "each task must be an object")
        ids.append(t.get("id", t.get("name")))
        r = t.get("runtime", t.get("runtimeInSeconds"))
        if r is None:
            raise InstanceError(f"{where}[{i}].runtime", "missing runtime (seconds)")
        runtimes.append(r)
        ps = t.get("parents", [])
        if not isinstance(ps, list):
            raise InstanceError(f"{where}[{i}].parents", "must be a list of task ids")
        parents.append(ps)
    # WfCommons 1.4 names its tasks' parents by task name where a task has both a name and
    # an id ("fastqSplit_00000001" is the parent of the task "00000002")
    by_name = {t["name"]: ident for t, ident in zip(tasks, ids, strict=True)
               if isinstance(t.get("name"), str) and t["name"] != ident}
    if by_name:
        known = {ident for ident in ids if isinstance(ident, str)}
        parents = [[by_name[p] if isinstance(p, str) and p not in known and p in by_name
                    else p for p in ps] for ps in parents]
    return build_workflow(label, ids, runtimes, parents, where=where)


def _execution_runtimes(execution: Any) -> dict[str, tuple[Any, str]]:
    """WfCommons 1.5 ``workflow.execution``: each task's runtime by its id, with the field
    it was read from."""
    if execution is None:
        return {}
    if not isinstance(execution, dict):
        raise InstanceError("workflow.execution", "expected an object whose 'tasks' list the "
                            "runtimes")
    where = "workflow.execution.tasks"
    tasks = execution.get("tasks")
    if tasks is None:
        return {}
    runtime_of: dict[str, tuple[Any, str]] = {}
    for j, t in enumerate(_task_list(tasks, where)):
        if not isinstance(t, dict):
            raise InstanceError(f"{where}[{j}]", "each task must be an object")
        tid = t.get("id")
        if not isinstance(tid, str):
            raise InstanceError(f"{where}[{j}].id", f"each task needs a string id (the id of "
                                f"a task in workflow.specification.tasks), got {_shown(tid)}")
        key = "runtimeInSeconds" if "runtimeInSeconds" in t else "runtime"
        runtime_of[tid] = (t.get(key), f"{where}[{j}].{key}")
    return runtime_of


def _task_list(value: Any, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise InstanceError(where, "expected a list of tasks")
    return value


def parse_workflow_bytes(data: bytes, filename: str, max_bytes: int = 64 << 20) -> Workflow:
    """A DAX ``.xml``/``.dax`` or a ``.json`` workflow, optionally gzipped; the extension says
    which."""
    lower = filename.lower()
    if lower.endswith(".gz"):
        data = gunzip(data, "the file", max_bytes)  # streamed, within the process's budget
        lower = lower[:-3]
    stem = Path(lower).stem or "workflow"
    label = Path(filename[:-3] if filename.lower().endswith(".gz") else filename).stem
    if lower.endswith((".xml", ".dax")):
        return parse_dax(data, label or stem)
    if lower.endswith(".json"):
        return workflow_from_dict(load_json(data, "the file"), label or stem)
    raise UnsupportedFormatError("file", f"unknown workflow extension in {filename!r}; use "
                                 ".xml/.dax (Pegasus DAX) or .json (WfCommons), optionally .gz")


def load_workflow(path: str | Path) -> Workflow:
    """Read one workflow file."""
    p = Path(path)
    return parse_workflow_bytes(read_file_bytes(p, 64 << 20), p.name)


def load_workflows(paths: Iterable[str | Path],
                   skipped: list[tuple[Path, str]] | None = None) -> list[Workflow]:
    """Files, or folders whose workflow files (``*.xml``, ``*.dax``, ``*.json``, ``.gz``) are
    read in name order. With a ``skipped`` list, a file that is not a valid workflow (or
    cannot be read) is left out and listed there with the reason, instead of failing the
    whole set (a real Pegasus folder may hold one file with a negative runtime)."""
    out: list[Workflow] = []
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            files = sorted(f for f in p.iterdir() if f.is_file() and
                           f.name.lower().removesuffix(".gz").endswith(WORKFLOW_EXTENSIONS))
            if not files:
                raise InstanceError("workflows", f"folder {p} holds no .xml/.dax/.json files")
        else:
            files = [p]
        for f in files:
            if skipped is None:
                out.append(_load_named(f))
                continue
            try:
                out.append(load_workflow(f))
            except InstanceError as exc:
                skipped.append((f, f"{exc.field}: {exc.message}"))
            except OSError as exc:
                skipped.append((f, f"cannot read: {exc.strerror or exc}"))
            except (ValueError, TypeError, KeyError, IndexError, AttributeError,
                    RecursionError) as exc:  # a parser error it does not name: still bad input
                skipped.append((f, f"cannot read the workflow: {exc}"))
    return out


def _load_named(path: Path) -> Workflow:
    """``load_workflow``, with the file's name in front of the field of any error, so a
    folder's bad file is named (not just ``tasks[0].runtime``)."""
    try:
        return load_workflow(path)
    except InstanceError as exc:
        raise InstanceError(f"{path}: {exc.field}", exc.message) from None


# -- generators ------------------------------------------------------------------------------
#: Mean runtimes (s) per stage, measured on the shipped Bharathi DAX files.
_RT = {
    "mProjectPP": 13.6, "mDiffFit": 10.6, "mConcatFit": 0.72, "mBgModel": 1.42,
    "mBackground": 10.7, "mImgTbl": 1.39, "mAdd": 3.03, "mShrink": 3.86, "mJPEG": 0.45,
    "ExtractSGT": 127.5, "SeismogramSynthesis": 37.8, "ZipSeis": 0.19,
    "PeakValCalcOkaya": 1.1, "ZipPSA": 0.07,
    "TmpltBank": 17.9, "Inspiral": 460.0, "Thinca": 5.2, "TrigBank": 5.3,
    "Patser": 1.2, "Patser_concate": 0.1, "Findterm": 981.0, "RNAMotif": 47.5,
    "Transterm": 44.5, "Blast": 2449.0, "SRNA": 491.0, "FFN_Parse": 1.55,
    "Blast_candidate": 6.0, "Blast_QRNA": 1466.0, "Blast_synteny": 33.0,
    "Blast_paralogues": 3.46, "SRNA_annotate": 2.18,
}
GENERATORS = ("montage", "cybershake", "inspiral", "sipht")


class _Builder:
    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng
        self.ids: list[str] = []
        self.kinds: list[str] = []
        self.rts: list[float] = []
        self.parents: list[list[str]] = []

    def add(self, kind: str, parents: Sequence[str] = ()) -> str:
        tid = f"ID{len(self.ids):05d}"
        self.ids.append(tid)
        self.kinds.append(kind)
        self.rts.append(round(_RT[kind] * float(self.rng.uniform(0.8, 1.2)), 2))
        self.parents.append(list(parents))
        return tid

    def build(self, name: str) -> Workflow:
        return build_workflow(name, self.ids, self.rts, self.parents, kinds=self.kinds)


def _montage(b: _Builder, n: int) -> None:
    # k projections, d ≈ 2k−1 overlaps, k background corrections and 6 single tasks.
    k = max(2, round((n - 5) / 4))
    d = max(1, n - 2 * k - 6)
    proj = [b.add("mProjectPP") for _ in range(k)]
    diffs = []
    for j in range(d):
        a = j % k
        c = (a + 1 + (j // k)) % k
        diffs.append(b.add("mDiffFit", [proj[a]] if a == c else [proj[a], proj[c]]))
    concat = b.add("mConcatFit", diffs)
    model = b.add("mBgModel", [concat])
    backs = [b.add("mBackground", [model, p]) for p in proj]
    tbl = b.add("mImgTbl", backs)
    b.add("mJPEG", [b.add("mShrink", [b.add("mAdd", [tbl])])])


def _cybershake(b: _Builder, n: int) -> None:
    s = max(1, round(n / 15))
    m = max(1, (n - s - 2) // 2)
    sgts = [b.add("ExtractSGT") for _ in range(s)]
    seis = [b.add("SeismogramSynthesis", [sgts[j % s]]) for j in range(m)]
    peaks = [b.add("PeakValCalcOkaya", [x]) for x in seis]
    b.add("ZipSeis", seis)
    b.add("ZipPSA", peaks)


def _inspiral(b: _Builder, n: int) -> None:
    groups = max(1, round(n / 30))
    per = max(1, (n // groups - 2) // 4)
    for _ in range(groups):
        first = [b.add("Inspiral", [b.add("TmpltBank")]) for _ in range(per)]
        thinca = b.add("Thinca", first)
        second = [b.add("Inspiral", [b.add("TrigBank", [thinca])]) for _ in range(per)]
        b.add("Thinca", second)


def _sipht(b: _Builder, n: int) -> None:
    patsers = [b.add("Patser") for _ in range(max(1, n - 12))]
    concat = b.add("Patser_concate", patsers)
    roots = [b.add(k) for k in ("Findterm", "RNAMotif", "Transterm", "Blast")]
    srna = b.add("SRNA", roots)
    ffn = b.add("FFN_Parse", [srna])
    last = [b.add("Blast_synteny", [ffn, srna])] + [
        b.add(k, [srna]) for k in ("Blast_candidate", "Blast_QRNA", "Blast_paralogues")]
    b.add("SRNA_annotate", [*last, concat, srna])


_SHAPES = {"montage": _montage, "cybershake": _cybershake, "inspiral": _inspiral,
           "sipht": _sipht}


def generate_workflow(kind: str, n: int, seed: int = 0) -> Workflow:
    """A workflow of the named shape with about ``n`` tasks (exact for the classic sizes:
    Montage 25, CyberShake 30, Inspiral 30, SIPHT 29) and seeded runtime noise."""
    if kind not in _SHAPES:
        raise InstanceError("generator", f"unknown workflow shape {kind!r}; known: "
                            f"{', '.join(GENERATORS)}")
    if not 10 <= n <= MAX_TASKS:
        raise InstanceError("tasks", f"must be between 10 and {MAX_TASKS}, got {n}")
    b = _Builder(np.random.default_rng(seed))
    _SHAPES[kind](b, n)
    return b.build(f"{kind}_{n}")


#: Sizes of the classic S templates; asking for 30 tasks gives these.
CLASSIC_SIZES = {"montage": 25, "cybershake": 30, "inspiral": 30, "sipht": 29}


def generate_set(shapes: Sequence[str], tasks: int = 30, seed: int = 0) -> list[Workflow]:
    """One generated template per shape (seeds seed, seed+1, …); ``tasks=30`` gives the
    classic 25/30/30/29-task sizes."""
    return [generate_workflow(k, CLASSIC_SIZES.get(k, tasks) if tasks == 30 else tasks,
                              seed + i) for i, k in enumerate(shapes)]


#: GOODRL's four S-size Pegasus templates as published DAX files: the workflows the shipped
#: policy was trained and validated on, which the training and the benchmarks share.
CLASSIC_DAX_FOLDER = Path(__file__).resolve().parents[2] / "tests" / "data" / "workflows"
CLASSIC_DAX_FILES = ("CyberShake_30.xml", "Montage_25.xml", "Inspiral_30.xml", "Sipht_30.xml.gz")


def classic_templates() -> list[Workflow]:
    """The four classic templates read from their DAX files (``CLASSIC_DAX_FILES``)."""
    return load_workflows([CLASSIC_DAX_FOLDER / name for name in CLASSIC_DAX_FILES])


def classic_set(seed: int = 0, size: int = 30) -> list[Workflow]:
    """The four GOODRL templates' shapes at one size (size 30 gives 25/30/30/29 tasks)."""
    return generate_set(GENERATORS, size, seed)


def _within(prefix: str, field: str) -> str:
    return prefix + field if field.startswith("[") else f"{prefix}.{field}"


def arrival_workflow(*, workflow: dict[str, Any] | None = None, document: str | None = None,
                     fmt: str | None = None, shape: str | None = None,
                     tasks: int | None = None, seed: int | None = None,
                     name: str = "workflow") -> Workflow:
    """The workflow of a session's arrival, given one of three ways: ``workflow`` (the compact
    JSON form), ``document`` (a DAX or WfCommons file's text, ``fmt`` "dax" or "wfcommons",
    told from a leading ``<`` by default) or ``shape`` (generated). The HTTP sessions and
    ``cosolve schedule session`` read events alike; errors name fields within the event
    (``document.tasks[0].runtime``). ``tasks`` (default 30) and ``seed`` (default 0) size and
    seed a generated workflow, and are refused beside a workflow or a document, which they
    would not change."""
    given = [k for k, v in (("workflow", workflow), ("document", document), ("shape", shape))
             if v is not None]
    if len(given) != 1:
        # named at the second source given (or at workflow when none is)
        raise InstanceError(given[1] if len(given) > 1 else "workflow",
                            "give one of workflow (the DAG), document (a DAX or WfCommons "
                            "file's text) or shape (a generated one)")
    if fmt is not None and document is None:
        raise InstanceError("format", "format describes a document; this event has none")
    if shape is None:
        for key, value in (("tasks", tasks), ("seed", seed)):
            if value is not None:
                # refused rather than ignored beside a document, silently
                raise InstanceError(key, f"{key} sizes or seeds a generated workflow (shape); "
                                    f"this event gives its {given[0]}, which {key} would not "
                                    "change")
    else:
        return generate_workflow(shape, 30 if tasks is None else tasks,
                                 0 if seed is None else seed)
    source = "workflow" if workflow is not None else "document"
    try:
        if workflow is not None:
            return workflow_from_dict(workflow, name=str(workflow.get("name") or name))
        assert document is not None
        text = document.removeprefix("\ufeff")  # a byte-order mark is not content
        if fmt is None:
            fmt = "dax" if text.lstrip().startswith("<") else "wfcommons"
        if fmt == "dax":
            # parsed as the text it is: re-encoded, an encoding declaration (ISO-8859-1)
            # would garble every non-ASCII id ("é" back as "Ã©")
            return parse_dax(text, name)
        return workflow_from_dict(load_json(text, "the document"), name)
    except InstanceError as exc:
        # the parsers' "file" (and a non-object's "workflow") is the document as a whole
        whole = ("file", source) if workflow is not None else ("file", source, "workflow")
        field = source if exc.field in whole else _within(source, exc.field)
        raise type(exc)(field, exc.message) from None
