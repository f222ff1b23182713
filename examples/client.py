"""The REST API from Python with cosolve.Client: the catalogue, a solve in the request, a
comparison against a known solution, a job followed by its progress events, and a batch.

Start the server first (`make serve`), then run from the repository root:

    .venv/bin/python examples/client.py                       # http://127.0.0.1:8000
    .venv/bin/python examples/client.py --url http://host:8000 --time-limit 0.5

Every cost printed was recomputed and every plan checked by the server's independent checker;
a refused request raises an ApiError carrying the server's problem details.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from cosolve import ApiError, Client

DATA = Path(__file__).resolve().parents[1] / "tests" / "data"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default=os.environ.get("COSOLVE_URL", "http://127.0.0.1:8000"))
    parser.add_argument("--api-key", default=os.environ.get("COSOLVE_API_KEY"))
    parser.add_argument("--time-limit", type=float, default=1.0, help="seconds per solve")
    args = parser.parse_args()
    limit = args.time_limit

    with Client(args.url, api_key=args.api_key) as api:
        print("== the solvers that can run here")
        for s in api.solvers():
            print(f"  {s.name:<18} {','.join(s.problems):<16} available={s.available}")

        print("== a TSPLIB file, solved in the request")
        answer = api.solve(DATA / "eil51.tsp", "ils", time_limit=limit)
        print(f"  {answer!r}")

        print("== two solvers on a CVRPLIB file, gaps to its known solution")
        table = api.compare(DATA / "X-n101-k25.vrp", ["ortools", "pyvrp"], time_limit=limit,
                            reference=DATA / "X-n101-k25.sol")
        print(table)

        print("== a job, followed by its progress events")
        job = api.submit(DATA / "berlin52.tsp", "ils", time_limit=limit)
        for event in job.events():
            if event.status is not None:
                best = event.status.progress.best_cost
                print(f"  {event.event}: {event.status.state}, best cost {best}")
        print(f"  state: {job.wait().state}, cost {job.solution().cost}")
        print("  " + "\n  ".join(job.solution_file("tour").splitlines()[:5]))

        print("== a batch of files and a known solution")
        batch = api.submit_batch([DATA / "eil51.tsp", DATA / "eil51.opt.tour",
                                  DATA / "berlin52.tsp"], "ils", time_limit=limit)
        for row in batch.wait().results:
            gap = "" if row.gap_percent is None else f", gap {row.gap_percent:.2f} %"
            print(f"  {row.filename}: {row.state}, cost {row.cost}{gap}")

        print("== a refused request")
        try:
            api.solve({"coords": [[0, 0], [1, 1]]}, "ils", time_limit=limit)
        except ApiError as err:
            print(f"  {err.status} {err.title} (field {err.field}): {err.detail}")


if __name__ == "__main__":
    main()
