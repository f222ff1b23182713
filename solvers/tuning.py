"""The solvers' own COSOLVE_* environment variables (the service's limits live in
app/settings.py): read once at import, where a bad value falls back to the default, and checked
by ``check_tuning`` where the service and the CLI start, so a typo is one line naming the
variable instead of a traceback or a silent fallback."""

from __future__ import annotations

import os

from solvers.cpus import available_cpus

#: Each variable: its default and what it may be.
#: More torch threads than any machine has cores (torch itself overflows far above).
MAX_THREADS = 4096
TUNING = {
    "COSOLVE_TORCH_THREADS": ("1", f"an integer from 1 to {MAX_THREADS} (torch CPU threads per "
                              "solve)"),
    "COSOLVE_SIL_PRECISION": ("auto", "auto, fp32 or bf16"),
    "COSOLVE_SIL_VIEWS": ("1", "0 or 1"),
    "COSOLVE_ILS_THREADS": ("auto", f"auto (the CPUs the process may use) or an integer from 1 "
                            f"to {MAX_THREADS} (ils's CVRP searches at once)"),
}


def _value(name: str) -> str:
    """The variable as set, spaces around it dropped; unset or empty is the default."""
    return os.environ.get(name, "").strip() or TUNING[name][0]


def tuning_problem(name: str, value: str) -> str | None:
    """What is wrong with ``value`` for the variable ``name``, in one line naming it; None
    when it is fine (benchmarks check their own options with it too)."""
    if name == "COSOLVE_TORCH_THREADS":
        ok = value.isascii() and value.isdigit() and 0 < int(value) <= MAX_THREADS
    elif name == "COSOLVE_ILS_THREADS":
        ok = value == "auto" or (value.isascii() and value.isdigit()
                                 and 0 < int(value) <= MAX_THREADS)
    elif name == "COSOLVE_SIL_PRECISION":
        ok = value in ("auto", "fp32", "bf16")
    else:
        ok = value in ("0", "1")
    return None if ok else f"{name}: must be {TUNING[name][1]}, got {value!r}"


def tuning(name: str) -> str:
    """The variable's value, or its default when unset or invalid (``check_tuning`` is where
    an invalid one is reported)."""
    value = _value(name)
    return TUNING[name][0] if tuning_problem(name, value) else value


def torch_threads() -> int:
    return int(tuning("COSOLVE_TORCH_THREADS"))


def ils_threads() -> int:
    """How many CVRP searches ``ils`` runs at once: ``COSOLVE_ILS_THREADS``, read at each
    call (a test or a benchmark sets it per run), ``auto`` being the CPUs this process may
    use."""
    value = tuning("COSOLVE_ILS_THREADS")
    if value == "auto":
        return available_cpus()
    return int(value)


def check_tuning() -> None:
    """ValueError naming every variable set to something it may not be."""
    problems = [p for name in TUNING for p in [tuning_problem(name, _value(name))] if p]
    if problems:
        raise ValueError("; ".join(problems))
