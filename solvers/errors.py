"""Domain errors that the API and CLI turn into clear messages.

They live in the domain (not in app/) so that a file read by the CLI and a body posted to the
API fail with the same words and name the same field. Each class also says how it is
reported, so app/ and cli/ map none of them by hand: ``status`` is the HTTP status, ``kind``
and ``title`` the RFC 9457 problem type (``urn:cosolve:problem:<kind>``) and title, and
``exit_code`` the CLI's (1: the solver or the environment failed, 2: the input is at fault).
"""

from __future__ import annotations

from typing import Any


class CosolveError(Exception):
    """Base class of every error cosolve raises on purpose."""

    status: int = 422
    kind: str = "unprocessable"
    title: str = "Cannot process the request"
    exit_code: int = 1
    #: The part of the request or the input at fault, when one is.
    field: str | None = None

    def problem_extra(self) -> dict[str, Any]:
        """Members the HTTP problem details carry besides the detail (e.g. a limit)."""
        return {}


class InstanceError(CosolveError, ValueError):
    """An instance is malformed; ``field`` names the part at fault (e.g. ``demands[3]``)."""

    kind = "invalid-instance"
    title = "Invalid instance"
    exit_code = 2

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


class BudgetError(InstanceError):
    """A ``Budget`` field is out of range or of the wrong type; ``field`` names it
    (``time_limit``, ``seed``, ``max_solutions``, ``cancel``, ``device``). An InstanceError,
    so callers that catch bad input catch it too."""


class UnsupportedFormatError(InstanceError):
    """A file asks for something we do not read (an EDGE_WEIGHT_TYPE, a TYPE, an extension)."""

    kind = "unsupported-format"
    title = "Unsupported instance format"


class InstanceTooLargeError(CosolveError):
    """The instance is larger than a solver (or the request path) can handle."""

    status = 413
    kind = "instance-too-large"
    title = "Instance too large"
    exit_code = 2

    def __init__(self, message: str, nodes: int, limit: int, unit: str = "nodes",
                 field: str | None = None) -> None:
        super().__init__(message)
        self.nodes = nodes  # the count that is too large, of ``unit`` (nodes, or a flow's arcs)
        self.limit = limit
        self.unit = unit
        self.field = field  # the request's part to change (``solver`` for a solver's limit)

    def problem_extra(self) -> dict[str, Any]:
        return {"nodes": self.nodes, "limit": self.limit}


class BudgetTooSmallError(CosolveError, ValueError):
    """The time limit is shorter than the solver needs to start up on an instance this size."""

    kind = "time-limit-too-small"
    title = "Time limit too small for this solver"
    exit_code = 2
    field = "time_limit"

    def __init__(self, message: str, needed: float) -> None:
        super().__init__(message)
        self.message = message
        self.needed = needed

    def problem_extra(self) -> dict[str, Any]:
        return {"needed": self.needed}


class UnknownSolverError(CosolveError, KeyError):
    """No solver is registered under that name."""

    status = 404
    kind = "unknown-solver"
    title = "Unknown solver"
    exit_code = 2
    field = "solver"

    def __init__(self, name: str, known: list[str]) -> None:
        super().__init__(name)
        self.name = name
        self.known = known

    def __str__(self) -> str:
        return f"unknown solver {self.name!r}; known solvers: {', '.join(self.known)}"


class SolverUnavailableError(CosolveError):
    """A solver is registered but cannot run here (missing weights or package)."""

    status = 503
    kind = "solver-unavailable"
    title = "Solver unavailable"
    field = "solver"

    def __init__(self, name: str, reason: str) -> None:
        super().__init__(f"solver {name!r} is unavailable: {reason}")
        self.name = name
        self.reason = reason


class ProblemMismatchError(CosolveError):
    """A solver was asked to solve a problem it does not support."""

    kind = "problem-mismatch"
    title = "Solver does not solve this problem"
    exit_code = 2
    field = "solver"

    def __init__(self, solver: str, problem: str, supported: list[str]) -> None:
        super().__init__(
            f"solver {solver!r} does not solve {problem}; it solves: {', '.join(supported)}"
        )
        self.solver = solver
        self.problem = problem
        self.supported = supported


class NoSolutionError(CosolveError):
    """A solver ran but produced no solution within its budget. ``field`` is the input to
    change (the time limit unless said otherwise), and ``more_time_helps`` says whether
    advising a larger time limit makes sense (not when the search ended on its own)."""

    kind = "no-solution"
    title = "No solution found"

    def __init__(self, message: str, field: str = "time_limit",
                 more_time_helps: bool = True, proven: bool = False) -> None:
        super().__init__(message)
        self.field = field
        self.more_time_helps = more_time_helps
        #: no solution exists at all (an exhaustive search said so): the input is at fault,
        #: not the solver
        self.proven = proven
        if proven:
            self.exit_code = 2


class CheckFailedError(CosolveError):
    """An answer failed its independent check (a bug of ours, never the input's fault): it is
    not returned. ``violations`` says what the checker found."""

    status = 500
    kind = "check-failed"
    title = "Answer failed its independent check"

    def __init__(self, message: str, violations: list[str]) -> None:
        super().__init__(message + ": " + "; ".join(violations[:3])
                         + (f" (and {len(violations) - 3} more)" if len(violations) > 3 else ""))
        self.violations = violations

    def problem_extra(self) -> dict[str, Any]:
        return {"violations": self.violations}
