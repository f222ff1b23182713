"""Start-up benchmark: how long until the port answers, and until the server is ready.

Starts ``uvicorn app.main:app`` (as ``make serve`` does) with numba's cache in a fresh
folder (``NUMBA_CACHE_DIR``: every kernel compiles, as on the first start of a fresh
install) and then again with that cache filled (every later start), and measures from the
process's launch:

* port open: the first ``/healthz`` that answers 200 (the process imported the app and its
  solver registry, the job store opened);
* ready: the first ``/readyz`` that answers 200 (every solver warmed: numba kernels compiled
  or read from the cache, neural weights loaded); each solver's warm-up time comes from the
  server's log.

The repository's own cache (``__pycache__`` beside the sources) is left alone.

Run: ``python -m benchmarks.startup`` → ``benchmarks/results/startup.md``. Not a timed test.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import time
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
    write_table,
)

#: The longest a start may take before the run gives up on it, seconds.
LIMIT_S = 600.0
_WARMED = re.compile(r"cosolve: (\S+) warmed up in ([0-9.]+) s")


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _first_200(url: str, started: float, proc: subprocess.Popen[str]) -> float:
    while time.monotonic() - started < LIMIT_S:
        if proc.poll() is not None:
            raise RuntimeError(f"the server exited with {proc.returncode}")
        try:
            if httpx.get(url, timeout=10).status_code == 200:
                return time.monotonic() - started
        except httpx.TransportError:
            pass
        time.sleep(0.05)
    raise TimeoutError(f"{url} did not answer 200 within {LIMIT_S:g} s")


def measure(cache_dir: Path, label: str) -> dict[str, Any]:
    """One start with ``cache_dir`` as numba's cache; the server is stopped afterwards."""
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("COSOLVE_")}
    with tempfile.TemporaryDirectory(prefix="cosolve-startup-") as data, \
            tempfile.TemporaryFile(mode="w+") as log:
        env.update(COSOLVE_DATA_DIR=data, NUMBA_CACHE_DIR=str(cache_dir))
        started = time.monotonic()
        proc = subprocess.Popen([sys.executable, "-m", "uvicorn", "app.main:app", "--port",
                                 str(port)], cwd=REPO, env=env, stdout=log,
                                stderr=subprocess.STDOUT, text=True)
        try:
            base = f"http://127.0.0.1:{port}"
            port_open = _first_200(base + "/healthz", started, proc)
            warming = httpx.get(base + "/readyz", timeout=10)
            ready = _first_200(base + "/readyz", started, proc)
        finally:
            proc.terminate()
            proc.wait(timeout=30)
        log.seek(0)
        text = log.read()
    solvers = {name: float(s) for name, s in _WARMED.findall(text)}
    print(f"{label}: port open {port_open:.1f} s, ready {ready:.1f} s", file=sys.stderr,
          flush=True)
    return {"start": label, "port_open_s": round(port_open, 2), "ready_s": round(ready, 2),
            "readyz_while_warming": warming.status_code, "warmed_s": solvers}


def main(argv: list[str] | None = None) -> int:
    parser = parser_for("benchmarks.startup", __doc__)
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks/results/startup.md",
                        help="markdown report")
    args = parser.parse_args(argv)
    check_out(parser, args.out)
    prov = provenance("benchmarks.startup", argv)
    machine = machine_info()
    with tempfile.TemporaryDirectory(prefix="cosolve-numba-") as cache:
        runs = [measure(Path(cache), "cold (empty numba cache)"),
                measure(Path(cache), "warm (numba cache filled)")]
    lines = ["# Start-up: port open and ready", "", *header_lines(prov),
             f"- Load average at the start: {machine['load_average_at_start']} "
             f"(cores shared with other work when above 0)", "",
             "| start | port open (s) | ready (s) | /readyz meanwhile |",
             "|---|---:|---:|---:|"]
    lines += [f"| {r['start']} | {r['port_open_s']:.1f} | {r['ready_s']:.1f} | "
              f"{r['readyz_while_warming']} |" for r in runs]
    lines += ["", "Solvers that took 0.1 s or more to warm (seconds, from the server's log):",
              "", "| solver | cold | warm |", "|---|---:|---:|"]
    names = dict.fromkeys([*runs[0]["warmed_s"], *runs[1]["warmed_s"]])
    lines += [f"| {n} | {runs[0]['warmed_s'].get(n, 0):.1f} | "
              f"{runs[1]['warmed_s'].get(n, 0):.1f} |" for n in names]
    write_table(args.out, lines, {"runs": runs, "machine": machine}, prov, [])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
