"""The house rules of ../shared/DESIGN.md, checked on the source text so that a lazy import or
a long function cannot slip through: imports run one way (app, cli, cosolve -> jobs ->
solvers -> models; training and benchmarks -> solvers, models), no import cycle among the
project's modules, a project import inside a function only for a heavy optional dependency,
no file over 800 lines outside tests/, no function over 120 lines, no history in comments,
a short README and one current table per benchmark."""

from __future__ import annotations

import ast
import re
import sys
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ROOMS = ("app", "cli", "cosolve", "jobs", "solvers", "models", "training", "benchmarks")
PROJECT = set(ROOMS) | {"tests", "examples"}
#: What each room may import of the others (its own room always).
ALLOWED = {
    "models": set(),
    "solvers": {"models"},
    "jobs": {"solvers", "models"},
    "app": {"jobs", "solvers", "models"},
    "cli": {"jobs", "solvers", "models", "cosolve"},
    "cosolve": {"jobs", "solvers", "models"},
    "training": {"solvers", "models"},
    "benchmarks": {"solvers", "models"},
}
#: Imports that make a module heavy to load: only these justify importing a project module
#: inside a function (so `cosolve solvers` and the app start without loading them).
HEAVY = {"torch", "numba", "ray", "ortools", "pyvrp", "uvicorn", "matplotlib", "scipy"}
MAX_FILE_LINES = 800
MAX_FUNCTION_LINES = 120
HISTORY = re.compile(r"QA (perf )?sweep|\bstop \d+\b|\bvar/s\d+|\bsession \d+\b", re.I)


@dataclass
class Module:
    name: str
    path: Path
    tree: ast.Module
    #: (line, target module, inside a function)
    imports: list[tuple[int, str, bool]] = field(default_factory=list)
    external: set[str] = field(default_factory=set)


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@cache
def modules() -> dict[str, Module]:
    found = {}
    for room in ROOMS:
        for path in sorted((REPO / room).rglob("*.py")):
            name = _module_name(path)
            found[name] = Module(name, path, ast.parse(path.read_text(), filename=str(path)))
    for mod in found.values():
        _collect_imports(mod, found)
    return found


def _resolve(name: str, known: dict[str, Module]) -> str | None:
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None


def _collect_imports(mod: Module, known: dict[str, Module]) -> None:
    is_package = mod.path.name == "__init__.py"

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            nested = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef))
            names: list[str] = []
            if isinstance(child, ast.Import):
                names = [a.name for a in child.names]
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    package = mod.name if is_package else mod.name.rpartition(".")[0]
                    for _ in range(child.level - 1):
                        package = package.rpartition(".")[0]
                    base = f"{package}.{base}".strip(".")
                names = [f"{base}.{a.name}" for a in child.names] + [base]
            for name in names:
                top = name.split(".")[0]
                if top not in PROJECT:
                    if not in_function:
                        mod.external.add(top)
                    continue
                target = _resolve(name, known)
                entry = (child.lineno, target, in_function)
                if target is not None and target != mod.name and entry not in mod.imports:
                    mod.imports.append(entry)
            visit(child, nested)

    visit(mod.tree, False)


def _edges(mod: Module) -> set[str]:
    """What importing ``mod`` may import: each target and the packages above it, except the
    packages ``mod`` itself lives in (Python has those loaded already)."""
    own = {mod.name.rsplit(".", k)[0] for k in range(1, mod.name.count(".") + 1)}
    out = set()
    for _, target, _ in mod.imports:
        parts = target.split(".")
        for k in range(1, len(parts) + 1):
            name = ".".join(parts[:k])
            if name in modules() and name not in own and name != mod.name:
                out.add(name)
    return out


def test_imports_run_one_way() -> None:
    bad = [f"{mod.path.relative_to(REPO)}:{line} imports {target}"
           for mod in modules().values()
           for line, target, _ in mod.imports
           if (room := mod.name.split(".")[0]) != (other := target.split(".")[0])
           and other not in ALLOWED[room]]
    assert not bad, "\n".join(bad)


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))

    def connect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            connect(v)
    return cycles


def test_no_import_cycle() -> None:
    cycles = _cycles({name: _edges(mod) for name, mod in modules().items()})
    assert not cycles, "import cycles:\n" + "\n".join(" <-> ".join(c) for c in cycles)


@cache
def _heavy(name: str) -> bool:
    """Whether importing ``name`` loads a heavy library (through its top-level imports)."""
    seen: set[str] = set()
    todo = [name]
    while todo:
        mod = modules()[todo.pop()]
        if mod.external & HEAVY:
            return True
        seen.add(mod.name)
        todo += [t for _, t, lazy in mod.imports if not lazy and t not in seen]
    return False


def test_project_imports_inside_functions_only_for_heavy_modules() -> None:
    bad = [f"{mod.path.relative_to(REPO)}:{line} imports {target} inside a function"
           for mod in modules().values()
           for line, target, lazy in mod.imports
           if lazy and not _heavy(target)]
    assert not bad, "\n".join(bad)


def _source_files() -> list[Path]:
    return [mod.path for mod in modules().values()] + sorted((REPO / "examples").rglob("*.py"))


def test_no_file_over_the_limit() -> None:
    long = [f"{path.relative_to(REPO)}: {n} lines" for path in _source_files()
            if (n := len(path.read_text().splitlines())) > MAX_FILE_LINES]
    assert not long, "\n".join(long)


def test_no_function_over_the_limit() -> None:
    long = [f"{mod.path.relative_to(REPO)}:{node.lineno} {node.name}: "
            f"{node.end_lineno - node.lineno + 1} lines"
            for mod in modules().values()
            for node in ast.walk(mod.tree)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES]
    assert not long, "\n".join(long)


def test_comments_carry_no_history() -> None:
    """Which sweep found what and when belongs in commit messages; comments say why."""
    paths = [*_source_files(), *sorted((REPO / "tests").rglob("*.py")),
             *sorted((REPO / "docs").rglob("*.md")), REPO / "README.md"]
    hits = [f"{path.relative_to(REPO)}:{i}: {line.strip()[:90]}"
            for path in paths if path != Path(__file__)
            for i, line in enumerate(path.read_text().splitlines(), 1)
            if HISTORY.search(line)]
    assert not hits, "\n".join(hits[:40]) + (f"\n... {len(hits)} in all" if len(hits) > 40
                                             else "")


#: Checks of the whole repository, which mirror no single package.
REPOSITORY_TESTS = {"test_layout.py", "test_docs.py", "test_examples.py", "test_fixed_answers.py",
                    "test_install.py", "test_dockerfile.py"}


def test_tests_mirror_the_packages() -> None:
    """A test lives in the folder of the package it tests (tests/solvers/routing/classical/
    for solvers/routing/classical/), so a newcomer finds it; tests/gpu holds what needs a
    device."""
    tests = REPO / "tests"
    stray = [str(p.relative_to(REPO)) for p in sorted(tests.glob("test_*.py"))
             if p.name not in REPOSITORY_TESTS]
    stray += [str(d.relative_to(REPO)) for d in sorted(tests.rglob("*"))
              if d.is_dir() and d.name not in ("__pycache__", "gpu")
              and "data" not in d.relative_to(tests).parts
              and not (REPO / d.relative_to(tests)).is_dir()]
    assert not stray, stray


def test_readme_is_short_and_starts_with_the_two_commands() -> None:
    text = (REPO / "README.md").read_text()
    assert len(text.splitlines()) <= 200
    assert "make serve" in text and "make test" in text


def test_benchmark_results_are_one_table_per_script() -> None:
    """Each results file belongs to a script (its name starts with the script's), one table each."""
    scripts = {p.stem for p in (REPO / "benchmarks").glob("*.py") if p.stem != "__init__"}
    tables: dict[str, int] = {}
    for path in (REPO / "benchmarks" / "results").iterdir():
        owner = max((s for s in scripts if path.name.startswith(s)), key=len, default=None)
        assert owner is not None, f"{path.name}: no benchmark script writes it"
        if path.suffix == ".md":
            tables[owner] = tables.get(owner, 0) + 1
    assert all(count == 1 for count in tables.values()), tables


def test_the_checks_can_fail(tmp_path: Path) -> None:
    """The graph code sees a cycle closed by a lazy import, and relative imports."""
    a = Module("solvers.a", tmp_path / "a.py", ast.parse("from . import b\n"))
    b = Module("solvers.b", tmp_path / "b.py", ast.parse("def f():\n    import solvers.a\n"))
    known = {"solvers": Module("solvers", tmp_path / "__init__.py", ast.parse("")),
             "solvers.a": a, "solvers.b": b}
    for mod in (a, b):
        _collect_imports(mod, known)
    assert a.imports == [(1, "solvers.b", False), (1, "solvers", False)]
    assert b.imports == [(2, "solvers.a", True)]
    graph = {"solvers.a": {"solvers.b"}, "solvers.b": {"solvers.a"}, "solvers.c": {"solvers.a"}}
    assert _cycles(graph) == [["solvers.a", "solvers.b"]]
    assert _cycles({"x": {"y"}, "y": set()}) == []


def test_the_image_ships_what_make_serve_runs() -> None:
    """The Dockerfile cannot be built here (no daemon), so what it must agree with is checked
    on its text: every package pyproject installs is copied, and the weights; torch is the
    `neural` extra, pinned alike in pyproject, the Makefile and the image's CPU-index line
    (any other request pulls a CUDA build); the image's Python is one pyproject and the
    Makefile's check accept; the command's module exists."""
    import tomllib

    docker = (REPO / "Dockerfile").read_text()
    make = (REPO / "Makefile").read_text()
    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    copied = {m.group(1).rstrip("/") for m in re.finditer(r"^COPY (\S+) ", docker, re.M)}
    packages = {name.rstrip("*") for name in project["tool"]["setuptools"]["packages"]["find"]
                ["include"]}
    assert packages | {"weights"} <= copied, (packages | {"weights"}) - copied
    assert set(ROOMS) - {"benchmarks"} <= packages, set(ROOMS) - packages
    assert not any(d.startswith("torch") for d in project["project"]["dependencies"])
    torch_pin = next(d for d in project["project"]["optional-dependencies"]["neural"]
                     if d.startswith("torch"))
    assert (f"--index-url https://download.pytorch.org/whl/cpu {torch_pin}\n" in docker)
    assert f"TORCH_VERSION := {torch_pin.removeprefix('torch==')}\n" in make
    low, high = re.fullmatch(r">=3\.(\d+),<3\.(\d+)",
                             project["project"]["requires-python"]).groups()
    assert f"(3, {low}) <= v <= (3, {int(high) - 1})" in make
    python = re.search(r"^FROM python:3\.(\d+)", docker, re.M)
    assert python and int(low) <= int(python.group(1)) < int(high)
    module = re.search(r'^CMD \["python", "-m", "([\w.]+)"', docker, re.M)
    assert module and (REPO / (module.group(1).replace(".", "/") + ".py")).is_file()


def test_the_image_keeps_its_data_starts_warm_and_installs_the_lock() -> None:
    """The job store is a volume; the numba kernels compile in a RUN line (after the code and
    the weights are in, into NUMBA_CACHE_DIR), not on each container start; every pip line of
    the image and of the Makefile takes requirements.lock as constraints, and the lock pins
    what pyproject pins."""
    import tomllib

    docker = (REPO / "Dockerfile").read_text()
    data = re.search(r"\bCOSOLVE_DATA_DIR=(\S+)", docker)
    assert data and re.search(rf"^VOLUME \[?\"?{re.escape(data.group(1))}\"?\]?$", docker, re.M)
    assert re.search(r"\bNUMBA_CACHE_DIR=/\S+", docker)
    lines = docker.splitlines()
    warm = next(i for i, line in enumerate(lines) if line.startswith("RUN ") and "warm_up" in line)
    assert warm > max(i for i, line in enumerate(lines) if line.startswith("COPY "))
    assert "COPY requirements.lock " in docker
    pips = [line for line in lines if line.startswith("RUN pip install")]
    assert pips and all(" -c requirements.lock " in line for line in pips), pips
    make = (REPO / "Makefile").read_text()
    assert "LOCK := requirements.lock\n" in make
    assert re.search(r"^PIP := .* -c \$\(LOCK\)$", make, re.M)
    lock = {}
    for line in (REPO / "requirements.lock").read_text().splitlines():
        if line and not line.startswith("#"):
            name, _, version = line.partition("==")
            lock[re.sub(r"[-_.]+", "-", name).lower()] = version
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    wanted = [*project["dependencies"], *(d for extra in project["optional-dependencies"]
                                           .values() for d in extra)]
    for dependency in wanted:
        name = re.sub(r"[-_.]+", "-", re.match(r"[\w.-]+", dependency).group()).lower()
        assert name in lock, f"{name} is not in requirements.lock (make lock)"
        pin = re.search(r"==([\w.]+)", dependency)
        if pin:
            assert lock[name] == pin.group(1), (name, lock[name], pin.group(1))
