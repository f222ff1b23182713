"""What the registry knows of the two baselines before loading them: their size caps and the
shortest time limit each can keep. Kept apart from the solver modules, which load numba
kernels, OR-Tools and PyVRP, so that listing the solvers (``cosolve solvers``) stays quick."""

from __future__ import annotations

import math

# -- OR-Tools -------------------------------------------------------------------------------

#: Largest instance given to OR-Tools as a dense integer matrix.
ORTOOLS_DENSE_LIMIT = 3_000
#: Above this, the first solution is our nearest-neighbour construction (O(N log N)).
ORTOOLS_NATIVE_LIMIT = 3_000
#: Seconds per node asked for above ORTOOLS_NATIVE_LIMIT (see ``ortools_min_time_limit``):
#: 1.5-2× the building time measured, 1.3× at 100K CVRP under load.
ORTOOLS_BUILD_SECONDS_PER_NODE = {"tsp": 1.0e-4, "cvrp": 2.0e-4}
#: Largest sizes accepted (measured on a 2-core, 24 GiB machine; see README).
ORTOOLS_MAX_NODES = {"tsp": 100_000, "cvrp": 100_000, "cvrptw": ORTOOLS_DENSE_LIMIT}


def ortools_min_time_limit(problem: str, nodes: int) -> float:
    """Seconds OR-Tools needs for its first solution up to ORTOOLS_NATIVE_LIMIT nodes,
    where the dense matrix and its own cheapest-arc construction run before the search can
    check the clock: uniform instances on the 2-core machine found none at 0.5 s and one at
    1 s for 2,000 nodes (TSP and CVRP), none at 1 s and one at 2 s for 3,000; a 2,000-node
    TSP asked for 0.1 s took 0.95 s to say so, a 3,000-node one 1.96 s. Below this figure
    (2.5e-7·N² s, rounded up) the registry refuses the request at once. Above the limit the
    model over a distance callback, read in from our nearest-neighbour start, takes a time
    linear in N that nothing interrupts (measured, uniform instances: TSP 0.31 / 1.28 /
    3.36 s at 5K / 20K / 50K nodes, CVRP 0.36 / 1.58 / 4.97 s; a 100K CVRP took about 15 s
    under load): ``ORTOOLS_BUILD_SECONDS_PER_NODE`` with a margin (a 100K TSP at 5 s failed
    after 10.8 s, a 100K CVRP at 10 s ran 15.4 s)."""
    if nodes > ORTOOLS_NATIVE_LIMIT:
        needed = ORTOOLS_BUILD_SECONDS_PER_NODE["cvrp" if problem == "cvrp" else "tsp"] * nodes
        return math.ceil(needed * 10) / 10
    needed = 2.5e-7 * nodes * nodes
    return 0.0 if needed < 0.2 else math.ceil(needed * 10) / 10


# -- PyVRP ----------------------------------------------------------------------------------

#: CVRPTW with float times needs a second N² matrix (durations), hence its lower cap.
PYVRP_MAX_NODES = {"tsp": 10_000, "cvrp": 10_000, "cvrptw": 5_000}


def pyvrp_min_time_limit(problem: str, nodes: int) -> float:
    """Seconds PyVRP needs before it can first check its stopping criterion.

    Its start-up (neighbour lists, the first local search) grows with N² and cannot be
    interrupted: measured 0.65 s for a 3K-node TSP, 3.5 s at 5K, and 15 s (build included) for
    a 10K-node CVRP on a 2-core machine. Asking for less would overrun the time limit, so the
    registry refuses it with this figure instead (twice the measured start-up).
    """
    return round(3e-7 * nodes * nodes, 1)
