"""Fair share of the in-request solving threads: how long one client's short solve waits
while another client's many long solves run.

Starts a real uvicorn server on loopback with two API keys. Client A sends ``--heavy`` long
OR-Tools solves at once (``--long`` s each); a second later client B sends a short one
(``--short`` s), ``--probes`` times, and its latency (request to answer) is measured. Run
twice: with ``COSOLVE_MAX_CLIENT_SOLVES`` and ``COSOLVE_MAX_CLIENT_RUNNING_SOLVES`` at 40, the
solving pool's size, so A runs as many solves as threads allow, as any client could before
per-client turns (first come, first served); and with the defaults (16 admitted, the cores'
count running, the rest of A's waiting their turn, past 16 refused with 429).

Run: ``python -m benchmarks.fair_share`` -> ``benchmarks/results/fair_share.md``. Not a
timed test; loopback only, about a minute.
"""

from __future__ import annotations

import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from benchmarks.common import (
    REPO,
    check_out,
    header_lines,
    machine_info,
    parser_for,
    provenance,
    relative,
    write_table,
)

RESULTS = REPO / "benchmarks" / "results" / "fair_share.md"
KEY_A = "fair-share-client-a-0123456789"
KEY_B = "fair-share-client-b-0123456789"
#: The solving pool's size (app.concurrency.SOLVE_THREADS; benchmarks may not import app).
POOL = 40


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def server(max_client_solves: int | None) -> Iterator[str]:
    """A uvicorn server with keys A and B; ``max_client_solves`` None keeps the default."""
    port = _free_port()
    with tempfile.TemporaryDirectory(prefix="cosolve-fair-") as data_dir:
        env = {k: v for k, v in os.environ.items() if not k.startswith("COSOLVE_")}
        env.update(COSOLVE_DATA_DIR=data_dir, COSOLVE_API_KEYS=f"{KEY_A},{KEY_B}")
        if max_client_solves is not None:  # and as many running: nothing waits its turn
            env["COSOLVE_MAX_CLIENT_SOLVES"] = str(max_client_solves)
            env["COSOLVE_MAX_CLIENT_RUNNING_SOLVES"] = str(max_client_solves)
        proc = subprocess.Popen([sys.executable, "-m", "uvicorn", "app.main:app", "--port",
                                 str(port), "--log-level", "warning"], cwd=REPO, env=env)
        url = f"http://127.0.0.1:{port}"
        try:
            # OR-Tools answers once it is warm (503 before), while the other solvers may
            # still be warming: a cold numba cache compiles for minutes on a loaded machine
            deadline = time.monotonic() + 600
            while True:
                try:
                    if _solve(url, KEY_B, _tsp(20, 1), 0.2)[0] == 200:
                        break
                except httpx.TransportError:
                    pass
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise RuntimeError("the server did not answer a solve within 600 s")
                time.sleep(0.5)
            yield url
        finally:
            proc.terminate()
            proc.wait(timeout=30)


def _tsp(n: int, seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    return {"coords": [[rng.uniform(0, 1000), rng.uniform(0, 1000)] for _ in range(n)]}


def _solve(url: str, key: str, instance: dict[str, Any], seconds: float) -> tuple[int, float]:
    """(status, latency in s) of one in-request OR-Tools solve."""
    started = time.perf_counter()
    response = httpx.post(f"{url}/v1/routing/tsp/solve", timeout=600,
                          headers={"Authorization": f"Bearer {key}"},
                          json={"instance": instance, "solver": "ortools",
                                "time_limit": seconds, "seed": 0})
    return response.status_code, time.perf_counter() - started


def measure(url: str, heavy: int, long_s: float, short_s: float, probes: int
            ) -> dict[str, Any]:
    """A's ``heavy`` long solves at once, B's ``probes`` short ones during them."""
    big, small = _tsp(200, 2), _tsp(20, 3)
    with ThreadPoolExecutor(heavy) as pool:
        heavy_runs = [pool.submit(_solve, url, KEY_A, big, long_s) for _ in range(heavy)]
        time.sleep(1.0)  # A's solves are in
        probe_runs = []
        for _ in range(probes):
            probe_runs.append(_solve(url, KEY_B, small, short_s))
            time.sleep(0.2)
        a = [run.result() for run in heavy_runs]
    return {"b_latency_s": [round(t, 3) for _, t in probe_runs],
            "b_status": [s for s, _ in probe_runs],
            "a_answered": sum(1 for s, _ in a if s == 200),
            "a_refused_429": sum(1 for s, _ in a if s == 429),
            "a_latency_median_s": round(statistics.median(t for s, t in a if s == 200), 2)}


def main(argv: Sequence[str] | None = None) -> int:
    parser = parser_for("benchmarks.fair_share", __doc__)
    parser.add_argument("--heavy", type=int, default=40, help="Client A's solves at once.")
    parser.add_argument("--long", type=float, default=8.0, help="Their time limit, s.")
    parser.add_argument("--short", type=float, default=0.2, help="B's time limit, s.")
    parser.add_argument("--probes", type=int, default=3, help="B's solves, one after another.")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    check_out(parser, args.out)
    prov = provenance("benchmarks.fair_share", argv)
    info = machine_info(("ortools", "uvicorn", "cosolve"))
    runs: dict[str, dict[str, Any]] = {}
    for name, limit in (("first come, first served (per-client limits = pool, 40)", POOL),
                        ("per-client turns (the default limits)", None)):
        print(f"{name} ...", file=sys.stderr, flush=True)
        with server(limit) as url:
            runs[name] = measure(url, args.heavy, args.long, args.short, args.probes)
    lines = ["# Fair share of in-request solves", "", *header_lines(prov),
             f"- Load average at start {info['load_average_at_start']} (the cores are shared "
             "with other work when it is above 0)",
             f"- Client A: {args.heavy} OR-Tools solves of a 200-node TSP at once, "
             f"time limit {args.long:g} s; client B, 1 s later: {args.probes} solves of a "
             f"20-node TSP, time limit {args.short:g} s, one after another. Loopback, two API "
             "keys, one uvicorn server.", "",
             "| turns | B's latency (each probe) | B median | A answered / refused (429) "
             "| A median latency |", "|---|---|---:|---|---:|"]
    for name, run in runs.items():
        lines.append(f"| {name} | {', '.join(f'{t:.2f} s' for t in run['b_latency_s'])} | "
                     f"{statistics.median(run['b_latency_s']):.2f} s | {run['a_answered']} / "
                     f"{run['a_refused_429']} | {run['a_latency_median_s']:.2f} s |")
    lines += ["", "B's latency is its wait for a turn plus its own solve on cores shared with "
              "A's running solves. With the defaults A runs as many solves as the machine has "
              "cores, its others wait their turn (hence its longer latency), and those past "
              "COSOLVE_MAX_CLIENT_SOLVES are refused with 429 and Retry-After (to send again, "
              "or as jobs)."]
    write_table(args.out, lines, {"runs": runs, "args": vars(args) | {"out": relative(args.out)},
                                  "machine": info}, prov, [])
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
