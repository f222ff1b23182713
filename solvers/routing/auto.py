"""``--solver auto``: the measured "which solver" table as code.

Each rule names a problem, a size band, a fleet-cap condition and a longest time limit, and
lists solvers best first with the benchmark figure that put them in that order. The first rule
that matches the instance gives the order; the first solver in it that can take the request
here (installed, its checkpoint shipped, the size within its limit, the time limit above what
it needs at this size, coordinates when it reads them) is picked. docs/routing.md shows
``markdown_table()``; a test keeps the two the same.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from solvers.catalog import check_solver
from solvers.errors import CosolveError, InstanceError
from solvers.routing.problem import Instance

#: The name that asks for this choice wherever a routing solver's name is taken.
AUTO = "auto"
#: The problems ``auto`` chooses for.
ROUTING_PROBLEMS = ("tsp", "cvrp", "cvrptw")


@dataclass(frozen=True)
class Rule:
    """One row of the table: where it applies, the solvers best first, and why."""

    problem: str
    min_nodes: int
    max_nodes: int | None
    #: True: only with a fleet cap (``max_vehicles``); False: only without; None: either
    fleet_capped: bool | None
    #: the rule applies up to this time limit (s), None: any
    max_time_limit: float | None
    solvers: tuple[str, ...]
    #: the measured figure behind the order, with the results file it comes from
    why: str

    def matches(self, problem: str, nodes: int, fleet_capped: bool, time_limit: float) -> bool:
        return (problem == self.problem and nodes >= self.min_nodes
                and (self.max_nodes is None or nodes <= self.max_nodes)
                and (self.fleet_capped is None or fleet_capped == self.fleet_capped)
                and (self.max_time_limit is None or time_limit <= self.max_time_limit))

    def band(self) -> str:
        """The rule's conditions in words, as the docs table and the answer show them."""
        top = "" if self.max_nodes is None else f"{self.max_nodes:,}"
        if self.min_nodes <= 1 and top:
            size = f"up to {top} nodes"
        elif top:
            size = f"{self.min_nodes:,}–{top} nodes"
        else:
            size = f"{self.min_nodes:,} nodes or more" if self.min_nodes > 1 else "any size"
        words = [self.problem.upper(), size]
        if self.fleet_capped is True:
            words.append("with a fleet cap (max_vehicles)")
        elif self.fleet_capped is False:
            words.append("no fleet cap")
        if self.max_time_limit is not None:
            words.append(f"time limit ≤ {self.max_time_limit:g} s")
        return ", ".join(words)


_NEURAL_1S = ("TSP100 ×128 at 1 s: polynet 0.05–0.26 %, reld 0.10–0.19 % above PyVRP at "
              "2 s, ortools 2.32 % (results/neural.md)")

#: Checked in order; the first that matches decides. Every (problem, size) is covered by a
#: rule without a time or fleet condition, so a choice always has an order to try.
RULES: tuple[Rule, ...] = (
    Rule("tsp", 1, 200, None, 2.0, ("polynet", "reld", "pyvrp", "ortools", "nearest_neighbor"),
         _NEURAL_1S),
    Rule("tsp", 1, 999, None, None, ("pyvrp", "ils", "ortools", "nearest_neighbor"),
         "uniform TSP1000 at 10 s: pyvrp the best of the run, ortools 3.39 % above; TSPLIB at "
         "10 s: pyvrp 2.00 %, ortools 5.42 % above the optimum (results/routing.md)"),
    Rule("tsp", 1_000, None, None, None, ("ils", "sil_ls", "ortools", "nearest_neighbor"),
         "TSP1K ×64 at 10 s: ils 0.26 % above the LKH-3 fit, ortools 8.04 %; TSPLIB 1K–13.5K "
         "at 60 s: ils 0.20 % above the optimum; TSP100K at 120 s: ils 0.69 %, ortools "
         "22.70 % (results/sil.md)"),
    Rule("cvrp", 1, None, True, None, ("ils", "pyvrp", "ortools"),
         "CVRPLIB X capped at the best-known plan's route count, 10 s: ils 0.91 %, pyvrp "
         "1.11 % above the best-known, ortools 4.64 % on the 3 of 9 it solved "
         "(results/fleet.md)"),
    Rule("cvrp", 1, 200, False, 2.0,
         ("polynet", "reld", "pyvrp", "ils", "ortools", "nearest_neighbor"),
         "CVRP100 ×128 at 1 s: polynet 0.78–0.84 %, reld 0.91–0.92 % above PyVRP at 4 s, "
         "ortools 6.53 % (results/neural.md)"),
    Rule("cvrp", 1, 450, False, None, ("pyvrp", "ils", "ortools", "nearest_neighbor"),
         "CVRPLIB X (25 instances, 101–936 nodes) at 10 s: pyvrp 1.24 %, ils 1.29 % above "
         "the best-known, pyvrp ahead below 450 nodes; ortools 7.44 % (results/routing.md)"),
    Rule("cvrp", 451, 10_000, False, None, ("ils", "pyvrp", "ortools", "nearest_neighbor"),
         "CVRPLIB X at 10 s: ils ahead of pyvrp above 450 nodes; one core each at 60 s: "
         "Leuven1 (3,001 nodes) ils 0.83 %, pyvrp 2.36 % above the best-known, uniform CVRP "
         "ils 0.1 % below pyvrp at 1K and 1.4 % at 10K, pyvrp 1.6 % ahead at 5K; pyvrp needs "
         "3e-7·N² s to start (results/routing.md, sil.md)"),
    Rule("cvrp", 10_001, None, False, None, ("ils", "sil_ls", "ortools", "nearest_neighbor"),
         "pyvrp stops at 10,000 nodes; at 100K ils is 10 % below ortools in 120 s "
         "(results/sil.md)"),
    Rule("cvrptw", 1, None, None, None, ("pyvrp", "reld", "polynet", "ortools",
                                         "nearest_neighbor"),
         "Solomon 100 at 10 s: pyvrp 0.00 % to LKH-3, ortools 0.64 %; CVRPTW100 ×128 at 4 s: "
         "reld 1.93 %, polynet 2.03 % above pyvrp (results/cvrptw.md, neural.md)"),
)


@dataclass
class Choice:
    """What ``auto`` picked, the rule that decided and the solvers passed over on the way."""

    picked: str
    rule: Rule
    #: (solver, why it could not take this request), for those before ``picked``
    skipped: list[tuple[str, str]] = field(default_factory=list)

    @property
    def reason(self) -> str:
        text = f"{self.rule.band()}: {self.rule.why}"
        if self.skipped:
            text += "; passed over " + "; ".join(f"{name} ({why})" for name, why in self.skipped)
        return text

    def to_dict(self) -> dict[str, Any]:
        return {"picked": self.picked, "reason": self.reason, "band": self.rule.band(),
                "order": list(self.rule.solvers),
                "skipped": [{"solver": name, "reason": why} for name, why in self.skipped]}


def rule_for(problem: str, nodes: int, fleet_capped: bool = False,
             time_limit: float = math.inf) -> Rule:
    """The table's row for a problem of this size, fleet and time limit."""
    for rule in RULES:
        if rule.matches(problem, nodes, fleet_capped, time_limit):
            return rule
    raise ValueError(f"no auto rule for {problem!r}")


def choose_for(problem: str, nodes: int, time_limit: float, *, fleet_capped: bool = False,
               has_coordinates: bool = True) -> Choice:
    """The solver ``auto`` runs for this request, checked as a named solver would be (no
    solver built, no torch imported). Raises the preferred solver's CosolveError when none in
    the rule's order can take the request (an error that says what to change)."""
    rule = rule_for(problem, nodes, fleet_capped, time_limit)
    skipped: list[tuple[str, str]] = []
    first_error: CosolveError | None = None
    for name in rule.solvers:
        try:
            check_solver(name, problem, nodes, time_limit, has_coordinates)
        except CosolveError as exc:
            first_error = first_error or exc
            skipped.append((name, _short(exc)))
            continue
        return Choice(name, rule, skipped)
    assert first_error is not None
    raise first_error


def choose(instance: Instance, time_limit: float) -> Choice:
    """``choose_for`` on an instance: its problem, size, fleet cap and coordinates."""
    return choose_for(instance.problem, instance.n, time_limit,
                      fleet_capped=getattr(instance, "max_vehicles", None) is not None,
                      has_coordinates=instance.coords is not None)


def resolve(solver: str, instance: Instance, time_limit: float) -> str:
    """``solver`` itself, or the one ``auto`` picks for this instance."""
    return choose(instance, time_limit).picked if solver == AUTO else solver


def _short(exc: CosolveError) -> str:
    """Why a solver was passed over, in a few words (the error's first clause)."""
    if isinstance(exc, InstanceError) and exc.field == "coords":
        return "needs node coordinates; this instance has only a distance matrix"
    text = getattr(exc, "message", None) or str(exc)
    for stop in (". ", " (", "; "):
        cut = text.find(stop)
        text = text if cut < 0 else text[:cut]
    return text


def markdown_table() -> str:
    """The table docs/routing.md shows (a test compares them)."""
    lines = ["| problem and size | auto tries, in order | why (measured) |", "|---|---|---|"]
    for rule in RULES:
        order = " → ".join(f"`{name}`" for name in rule.solvers)
        lines.append(f"| {rule.band()} | {order} | {rule.why} |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(markdown_table())
