"""Solve a bundled CVRPLIB instance, then compare two solvers on it at equal time.

Run from the repository root, inside the project's virtualenv:

    .venv/bin/python examples/solve_and_compare.py            # 2 s per solver
    .venv/bin/python examples/solve_and_compare.py --time-limit 0.5

Every cost printed is recomputed by the instance and every plan is checked by an independent
checker; the gap is to the best-known cost of X-n101-k25 (CVRPLIB's X-n101-k25.sol, shipped
beside the instance in tests/data/).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from cosolve import Budget, compare, load_instance, solve

DATA = Path(__file__).resolve().parents[1] / "tests" / "data"
BEST_KNOWN = 27591  # the cost of tests/data/X-n101-k25.sol in the file's EUC_2D convention


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--time-limit", type=float, default=2.0, help="seconds per solver")
    parser.add_argument("--solvers", default="ortools,pyvrp", help="comma-separated names")
    args = parser.parse_args()

    instance = load_instance(DATA / "X-n101-k25.vrp")
    budget = Budget(time_limit=args.time_limit, seed=0)

    # One solver: a checked Solution with its routes, cost and the solver's statistics.
    solution = solve(instance, "nearest_neighbor", budget)
    print(f"nearest_neighbor: cost {solution.cost:,.0f}, {len(solution.routes)} routes, "
          f"feasible={solution.feasible}")

    # Several solvers side by side, same budget, gaps to the best row and to the reference.
    table = compare(instance, args.solvers.split(","), budget, reference=BEST_KNOWN)
    print(f"\nX-n101-k25 at {args.time_limit:g} s per solver (best known {BEST_KNOWN:,}):")
    for row in table.rows:
        if row.solution is None:
            print(f"  {row.solver:<10} failed: {row.error}")
            continue
        print(f"  {row.solver:<10} cost {row.solution.cost:>9,.0f}  "
              f"gap {row.gap_to_reference:5.2f} %  time {row.solution.wall_time:.2f} s")
    print(f"best: {table.best_solver}")


if __name__ == "__main__":
    main()
