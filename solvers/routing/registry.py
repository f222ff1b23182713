"""Registers the routing solvers. Importing this module is what makes them known."""

from __future__ import annotations

import importlib.util
import math

from solvers.contract import SolverSpec
from solvers.device import torch_missing
from solvers.routing.baselines.limits import (
    ORTOOLS_DENSE_LIMIT,
    ORTOOLS_MAX_NODES,
    ORTOOLS_NATIVE_LIMIT,
    PYVRP_MAX_NODES,
    ortools_min_time_limit,
    pyvrp_min_time_limit,
)
from solvers.routing.neural.checkpoints import checkpoint_path, missing_checkpoint, shipped_problems

#: This family's solvers, in the order listings show them; ``solvers.catalog`` registers them.
SPECS: list[SolverSpec] = []
_NEURAL_PROBLEMS = ("tsp", "cvrp", "cvrptw")


def _needs_package(module: str, pip_name: str) -> str | None:
    if importlib.util.find_spec(module) is None:
        return f"the Python package {pip_name!r} is not installed (pip install {pip_name})"
    return None


# The factories import their solver modules when a solver is built: those modules load
# numba kernels, OR-Tools, PyVRP and torch, which listing the solvers must not wait for.
def _ortools_solver():  # type: ignore[no-untyped-def]
    from solvers.routing.baselines.ortools import ORToolsSolver

    return ORToolsSolver()


def _pyvrp_solver():  # type: ignore[no-untyped-def]
    from solvers.routing.baselines.pyvrp import PyVRPSolver

    return PyVRPSolver()


def _nn_solver():  # type: ignore[no-untyped-def]
    from solvers.routing.classical.construct import NearestNeighbourSolver

    return NearestNeighbourSolver()


SPECS.append(
    SolverSpec(
        name="ortools",
        family="routing",
        problems=("tsp", "cvrp", "cvrptw"),
        description=(
            "Google OR-Tools routing: PATH_CHEAPEST_ARC first solution (nearest neighbour above "
            f"{ORTOOLS_NATIVE_LIMIT} nodes) + guided local search until the "
            "time limit. Dense matrix up to "
            f"{ORTOOLS_DENSE_LIMIT} nodes, a distance callback above; up to "
            f"{ORTOOLS_NATIVE_LIMIT} nodes its first solution cannot be "
            "interrupted, so it asks for a time limit of at least 2.5e-7·N² s (1 s at 2K "
            "nodes). CVRPTW: a time "
            "dimension (waiting as slack) and droppable customers, so a tight fleet still "
            "yields a solution (infeasible if any customer is left out)."
        ),
        factory=_ortools_solver,
        max_nodes=dict(ORTOOLS_MAX_NODES),
        availability=lambda: _needs_package("ortools", "ortools"),
        min_time_limit=ortools_min_time_limit,
    )
)
SPECS.append(
    SolverSpec(
        name="pyvrp",
        family="routing",
        problems=("tsp", "cvrp", "cvrptw"),
        description=(
            "PyVRP iterated local search (MIT; state of the art on CVRPLIB Set X) from a "
            "nearest-neighbour start. TSP is solved as one vehicle; CVRPTW natively (the "
            "reference for time windows). Dense integer matrix, so "
            f"capped at {PYVRP_MAX_NODES['cvrp']} nodes; its start-up grows with N², so it "
            "asks for a time limit of at least 3e-7·N² s (7.5 s at 5K nodes)."
        ),
        factory=_pyvrp_solver,
        max_nodes=dict(PYVRP_MAX_NODES),
        availability=lambda: _needs_package("pyvrp", "pyvrp"),
        min_time_limit=pyvrp_min_time_limit,
    )
)
SPECS.append(
    SolverSpec(
        name="nearest_neighbor",
        family="routing",
        problems=("tsp", "cvrp", "cvrptw"),
        description=(
            "Greedy nearest-neighbour construction over a KD-tree (no matrix): a fast floor, "
            "about 2 s for a 100K-node TSP. Ignores the time limit beyond finishing. CVRPTW: "
            "the reachable customer whose service can start soonest, O(N²) time."
        ),
        factory=_nn_solver,
        max_nodes={"tsp": 2_000_000, "cvrp": 2_000_000, "cvrptw": 20_000},
    )
)


def _ils_solver():  # type: ignore[no-untyped-def]
    from solvers.routing.classical.ils import ILSSolver

    return ILSSolver()


SPECS.append(
    SolverSpec(
        name="ils",
        family="routing",
        problems=("tsp", "cvrp"),
        description=(
            "Classical iterated local search on coordinates. TSP: random insertion, 2-opt + "
            "Or-opt over 10-nearest-neighbour lists, then local double-bridge kicks (swap two "
            "adjacent short segments, repair around them; improvements kept and, annealed "
            "over the time limit, some worsening kicks, the shortest tour met returned) until "
            "the time limit; up to 2M nodes. CVRP: a random-insertion tour split optimally "
            "into routes, then relocate / swap / 2-opt* between 20 nearest neighbours and "
            "ruin-and-recreate kicks (20 customers around one), annealed the same way (the "
            "shortest plan met returned); up to 1M customers and the depot (see "
            "benchmarks/results/cvrp_large.md). No matrix. The classical part of "
            "`sil_ls` on its own: the benchmarks put it beside SIL so the neural part's share "
            "shows."
        ),
        needs_coordinates=True,
        factory=_ils_solver,
        max_nodes={"tsp": 2_000_000, "cvrp": 1_000_001},
    )
)


#: Seconds per node and per node² of the smallest CVRP / CVRPTW pass of reld and polynet
#: (one trajectory on one symmetry: the decoder attends to every node at every step), fitted
#: on this 2-core machine (CVRP 500-4,000 nodes: 0.15, 0.44, 1.22, 4.82 s; CVRPTW 500-2,000:
#: 0.36, 0.63, 2.87 s).
_FIRST_PASS_COST = {"cvrp": (2e-4, 3e-7), "cvrptw": (3e-4, 7e-7)}


def _neural_min_time_limit(problem: str, nodes: int) -> float:
    """The time limit below which reld and polynet cannot finish their first pass, with a
    1.5 margin for load: 2,000-node CVRPTW at 0.5 s ran 2-3.6 s. The TSP has none: short
    budgets start from random insertion. Below 0.2 s (CVRP up to about 450 nodes) none."""
    if problem not in _FIRST_PASS_COST:
        return 0.0
    linear, quadratic = _FIRST_PASS_COST[problem]
    needed = 1.5 * (linear * nodes + quadratic * nodes * nodes)
    return 0.0 if needed < 0.2 else math.ceil(needed * 10) / 10


def _reld_solver():  # type: ignore[no-untyped-def]
    from solvers.routing.neural.reld import ReLDSolver

    return ReLDSolver()


# Availability is read from the checkpoint files' names: importing the neural modules would
# import torch, and `cosolve solvers` would wait 3.5 s for it.
def _reld_availability() -> str | None:
    if shipped_problems("reld", _NEURAL_PROBLEMS):
        return torch_missing()
    return ("no trained weights: weights/reld_tsp.pt, reld_cvrp.pt and reld_cvrptw.pt are "
            "missing; train them with `python -m training.reld tsp|cvrp` and `python -m "
            "training.polynet cvrptw --single`")


def _reld_problem_availability(problem: str) -> str | None:
    if shipped_problems("reld", (problem,)):
        return None
    command = ("python -m training.polynet cvrptw --single" if problem == "cvrptw"
               else f"python -m training.reld {problem}")
    return missing_checkpoint(checkpoint_path("reld", problem), command)


SPECS.append(
    SolverSpec(
        name="reld",
        family="routing",
        problems=("tsp", "cvrp", "cvrptw"),
        description=(
            "ReLD (ICLR 2025): attention encoder + light decoder with identity mapping and a "
            "feed-forward layer, trained by us (weights/MANIFEST.json has the validation gap). "
            "Greedy multi-start over the 8 symmetries, then rotated views and sampling; then "
            "the model re-solves parts of its best solution (stretches of the tour, groups of "
            "neighbouring routes: neural local reconstruction, 30% of the time on the TSP, 50% "
            "on CVRP). TSPs of 400 nodes or more start from random insertion and give all the "
            "time to reconstruction. CVRPTW (which ReLD's paper does not treat): PolyNet's "
            "CVRPTW model reduced to one strategy (PolyNet's single-strategy ablation), with "
            "polynet's search and up to 100 forced first customers (as many as the time "
            "allows) in place of strategies. CVRP and CVRPTW plans end with a classical "
            "descent (relocate, swap, 2-opt*; relocation with windows), and a fleet cap is "
            "kept by route elimination."
        ),
        needs_coordinates=True,
        factory=_reld_solver,
        max_nodes={"tsp": 10_000, "cvrp": 10_000, "cvrptw": 2_000},
        min_time_limit=_neural_min_time_limit,
        needs_weights=True,
        kind="neural",
        availability=_reld_availability,
        problem_availability=_reld_problem_availability,
    )
)


def _sil_solver():  # type: ignore[no-untyped-def]
    from solvers.routing.neural.sil.solver import SILSolver

    return SILSolver()


def _sil_ls_solver():  # type: ignore[no-untyped-def]
    from solvers.routing.neural.sil.solver import SILSolver

    return SILSolver(polish=True)


def _sil_availability() -> str | None:
    if shipped_problems("sil", ("tsp", "cvrp")):
        return torch_missing()
    return ("no trained weights: weights/sil_tsp.pt is missing; train it with "
            "`python -m training.sit tsp`")


SPECS.append(
    SolverSpec(
        name="sil",
        family="routing",
        problems=("tsp", "cvrp"),
        description=(
            "SIL (ICLR 2025): linear-attention Transformer (candidates attend through a few "
            "representative tokens), trained by Self-Improved Training. Parallel local "
            "reconstruction of random-length segments until the time limit, from the model's "
            "own greedy k-nearest tour (random insertion when that does not fit a quarter of "
            "the time limit); up to 200K nodes. CVRP: route first (the TSP model rebuilds the "
            "angle-sorted giant tour), cluster second (optimal capacity split). Neural only "
            "(no classical local search)."
        ),
        needs_coordinates=True,
        factory=_sil_solver,
        max_nodes={"tsp": 200_000, "cvrp": 200_000},
        needs_weights=True,
        kind="neural",
        availability=_sil_availability,
    )
)
SPECS.append(
    SolverSpec(
        name="sil_ls",
        family="routing",
        problems=("tsp", "cvrp"),
        description=(
            "SIL's parallel local reconstruction with classical 2-opt + Or-opt (neighbour "
            "lists) on the start and after every round; on TSP each round is followed by as "
            "long again of `ils` kicks. Benchmarks report it apart from `sil` (neural only) "
            "and `ils` (classical only) so each part's gain shows."
        ),
        needs_coordinates=True,
        factory=_sil_ls_solver,
        max_nodes={"tsp": 200_000, "cvrp": 200_000},
        needs_weights=True,
        kind="neural",
        availability=_sil_availability,
    )
)


def _polynet_solver():  # type: ignore[no-untyped-def]
    from solvers.routing.neural.polynet import PolyNetSolver

    return PolyNetSolver()


def _polynet_availability() -> str | None:
    if shipped_problems("polynet", _NEURAL_PROBLEMS):
        return torch_missing()
    return ("no trained weights: " + " and ".join(
        f"weights/{checkpoint_path('polynet', p).name}" for p in _NEURAL_PROBLEMS)
            + " are missing; train them with `python -m training.polynet tsp|cvrp` (warm "
            "start from weights/reld_<problem>.pt)")


def _polynet_problem_availability(problem: str) -> str | None:
    if shipped_problems("polynet", (problem,)):
        return None
    return missing_checkpoint(checkpoint_path("polynet", problem),
                              f"python -m training.polynet {problem}")


SPECS.append(
    SolverSpec(
        name="polynet",
        family="routing",
        problems=("tsp", "cvrp", "cvrptw"),
        description=(
            "PolyNet (ICLR 2025) on the ReLD decoder: K=128 strategies from a bit vector fed "
            "to a residual block on the decoder query, fine-tuned from our ReLD weights with "
            "best-of-K REINFORCE (weights/MANIFEST.json has the validation gap). Greedy per "
            "strategy over the 8 symmetries, then sampling per strategy until the time limit; "
            "the stats name the winning strategy and symmetry; then the model re-solves parts of "
            "its best solution under the strategies in turn (neural local reconstruction; "
            "TSPs of 400 nodes or more start from random insertion). "
            "CVRPTW: time features in the node "
            "embedding, the clock in the context, masks for windows and capacity (warm "
            "start from the CVRP weights). CVRP and CVRPTW plans end with a classical "
            "descent, and a fleet cap is kept by route elimination."
        ),
        needs_coordinates=True,
        factory=_polynet_solver,
        max_nodes={"tsp": 10_000, "cvrp": 10_000, "cvrptw": 2_000},
        min_time_limit=_neural_min_time_limit,
        needs_weights=True,
        kind="neural",
        availability=_polynet_availability,
        problem_availability=_polynet_problem_availability,
        solution_budget=True,
    )
)
