"""The reliability suite in full, against real loopback servers: the bad-file corpus at the
default limits, schema fuzzing of every operation of the OpenAPI document, a load test of 30
and 50 clients, kill -9 of a worker and of the server with jobs in flight, and a full disk.

Each phase records requests, 5xx answers, hangs (no answer within --timeout), wrong answers
(a bad file not refused as a 4xx problem naming its field), latency p50/p99, the server's
memory peak (its process tree's resident set, sampled every 0.2 s) and jobs lost (accepted
and neither finished nor still queued or running with a stated state). The full disk needs
root to mount a small tmpfs; without it the phase is skipped and says so.

Run it niced on a shared machine (the table says how loaded the machine was):
``nice -n 10 .venv/bin/python -m benchmarks.reliability``.
"""

from __future__ import annotations

import contextlib
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from benchmarks.common import (
    REPO,
    RESULTS,
    header_lines,
    machine_info,
    parser_for,
    provenance,
    relative,
    write_table,
)
from benchmarks.reliability_corpus import ENDPOINTS, Bad, corpus

#: The servers' settings: solves inside a request are capped at 5 s so that fuzzed bodies
#: asking for 300 s do not read as hangs; everything else is the default.
SERVER_ENV = {"COSOLVE_MAX_TIME_LIMIT": "5", "COSOLVE_DEFAULT_TIME_LIMIT": "2"}
FINAL = ("succeeded", "failed", "cancelled")
PROBLEM_JSON = "application/problem+json"


@dataclass
class Phase:
    """What one phase measured."""

    name: str
    requests: int = 0
    server_errors: int = 0
    hangs: int = 0
    wrong: list[str] = field(default_factory=list)
    latencies: list[float] = field(default_factory=list)
    memory_peak_mb: float | None = None
    jobs: int = 0
    jobs_lost: int = 0
    notes: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def record(self, seconds: float, status: int | None) -> None:
        with self.lock:
            self.requests += 1
            if status is None:
                self.hangs += 1
                return
            self.latencies.append(seconds)
            self.server_errors += int(status >= 500)

    def row(self) -> dict[str, Any]:
        lat = sorted(self.latencies)
        pct = (lambda q: round(lat[min(len(lat) - 1, int(q * len(lat)))] * 1000, 1)
               ) if lat else (lambda q: None)
        return {"phase": self.name, "requests": self.requests, "5xx": self.server_errors,
                "hangs": self.hangs, "wrong": len(self.wrong), "p50_ms": pct(0.5),
                "p99_ms": pct(0.99), "memory_peak_mb": self.memory_peak_mb,
                "jobs": self.jobs, "jobs_lost": self.jobs_lost,
                "notes": "; ".join(self.notes + self.wrong[:3])}


# -- servers -------------------------------------------------------------------------------
def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Server:
    """A uvicorn server on loopback with its own data folder; ``kill`` is kill -9."""

    def __init__(self, data_dir: Path, env: dict[str, str] | None = None,
                 port: int | None = None) -> None:
        self.data_dir = data_dir
        self.port = port or _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        full = {k: v for k, v in os.environ.items() if not k.startswith("COSOLVE_")}
        full.update(SERVER_ENV, COSOLVE_DATA_DIR=str(data_dir), **(env or {}))
        self.log = tempfile.TemporaryFile()  # noqa: SIM115 - closed by stop(), not a block
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "uvicorn", "app.main:app", "--host", "127.0.0.1",
             "--port", str(self.port), "--log-level", "warning"],
            cwd=REPO, env=full, stdout=self.log, stderr=subprocess.STDOUT)

    def wait_ready(self, timeout: float = 300.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                self.log.seek(0)
                raise RuntimeError(f"the server exited: {self.log.read()[-2000:]!r}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{self.url}/readyz", timeout=5).status_code == 200:
                    return
            time.sleep(0.5)
        raise RuntimeError("the server did not get ready")

    def tree(self) -> list[int]:
        """The server's pid and its descendants' (the job workers)."""
        pids, todo = [], [self.proc.pid]
        while todo:
            pid = todo.pop()
            pids.append(pid)
            with contextlib.suppress(OSError):
                for task in os.listdir(f"/proc/{pid}/task"):
                    kids = Path(f"/proc/{pid}/task/{task}/children").read_text().split()
                    todo += [int(k) for k in kids]
        return pids

    def kill(self) -> None:
        for pid in reversed(self.tree()):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        self.proc.wait(10)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.kill()
        self.log.close()


def _rss_mb(pids: Sequence[int]) -> float:
    total = 0
    for pid in pids:
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
    return total / 1024


@contextlib.contextmanager
def memory_peak(server: Server, phase: Phase) -> Iterator[None]:
    """Sample the server tree's resident memory while the block runs; its peak into
    ``phase``."""
    done = threading.Event()
    peak = [0.0]

    def sample() -> None:
        while not done.wait(0.2):
            peak[0] = max(peak[0], _rss_mb(server.tree()))

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()
        phase.memory_peak_mb = round(max(peak[0], phase.memory_peak_mb or 0.0), 1)


def timed(phase: Phase, call: Callable[[], httpx.Response]) -> httpx.Response | None:
    started = time.perf_counter()
    try:
        response = call()
    except httpx.HTTPError:  # no answer in time, or the connection dropped: a hang
        phase.record(time.perf_counter() - started, None)
        return None
    phase.record(time.perf_counter() - started, response.status_code)
    return response


# -- phases --------------------------------------------------------------------------------
def bad_files(server: Server, timeout: float, gzip_bomb: int, zip_bomb: int) -> Phase:
    phase = Phase("bad-file corpus (5 endpoints, default limits)")
    with httpx.Client(base_url=server.url, timeout=timeout) as client, memory_peak(server,
                                                                                  phase):
        for bad in corpus(gzip_bomb_bytes=gzip_bomb, zip_bomb_bytes=zip_bomb):
            response = timed(phase, lambda b=bad: _post_bad(client, b))
            if response is not None and (why := _wrong(bad, response)):
                phase.wrong.append(f"{bad.name}: {why}")
        _alive(client, phase)
    return phase


def _post_bad(client: httpx.Client, bad: Bad) -> httpx.Response:
    path, part, fields = ENDPOINTS[bad.endpoint]
    return client.post(path, files=[(part, (bad.filename, bad.data))],
                       data={**fields, **bad.extra})


def _wrong(bad: Bad, response: httpx.Response) -> str | None:
    if response.status_code >= 500 or not bad.refused:
        return f"{response.status_code}" if response.status_code >= 500 else None
    if not (400 <= response.status_code < 500 and response.headers.get(
            "content-type", "").startswith(PROBLEM_JSON)):
        return f"{response.status_code}, not a 4xx problem"
    named = response.json().get("field") or ""
    if bad.field and named != bad.field and not named.startswith(f"{bad.field}."):
        return f"names {named!r}"
    return None


def _alive(client: httpx.Client, phase: Phase) -> None:
    try:
        alive = client.get("/healthz", timeout=10).status_code == 200
    except httpx.HTTPError:
        alive = False
    phase.notes.append("server alive after" if alive else "SERVER DOWN after")


def fuzzing(server: Server, timeout: float, examples: int) -> Phase:
    """Every operation, ``examples`` generated cases each; checks: not a server error."""
    import schemathesis

    phase = Phase(f"schema fuzzing (every operation, {examples} cases each)")
    with httpx.Client(base_url=server.url, timeout=timeout) as client, memory_peak(server,
                                                                                  phase):
        schema = schemathesis.openapi.from_dict(client.get("/openapi.json").json())
        operations = 0
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for result in schema.get_all_operations():
                operation = result.ok()
                operations += 1
                strategy = operation.as_strategy()
                for _ in range(examples):
                    case = strategy.example()
                    response = timed(phase, lambda c=case: c.call(base_url=server.url,
                                                                  timeout=timeout))
                    if response is not None and response.status_code >= 500:
                        phase.wrong.append(f"{case.method} {case.formatted_path}: "
                                           f"{response.status_code}")
        phase.notes.append(f"{operations} operations")
        _alive(client, phase)
    return phase


def _tsp(rng: random.Random, n: int) -> dict[str, Any]:
    return {"coords": [[round(rng.random() * 100, 3), round(rng.random() * 100, 3)]
                       for _ in range(n)]}


def load(server: Server, clients: int, seconds: float, timeout: float) -> Phase:
    """``clients`` threads for ``seconds``: small solves (four solvers, reld at 0.5 s), the
    catalogue, health, and jobs submitted and followed; reld's wall against its limit."""
    phase = Phase(f"load: {clients} clients, {seconds:g} s")
    reld_walls: list[float] = []
    job_ids: list[str] = []
    stop_at = time.monotonic() + seconds

    def client_loop(k: int) -> None:
        rng = random.Random(k)
        with httpx.Client(base_url=server.url, timeout=timeout) as client:
            while time.monotonic() < stop_at:
                pick = rng.random()
                if pick < 0.6:
                    solver = rng.choice(["nearest_neighbor", "ils", "ortools", "reld"])
                    limit = 0.5 if solver == "reld" else 0.2
                    body = {"instance": _tsp(rng, 50), "solver": solver, "time_limit": limit,
                            "seed": k}
                    response = timed(phase, lambda b=body: client.post(
                        "/v1/routing/tsp/solve", json=b))
                    if solver == "reld" and response is not None and response.is_success:
                        reld_walls.append(float(response.json()["wall_time"]))
                elif pick < 0.8:
                    timed(phase, lambda: client.get("/v1/solvers"))
                elif pick < 0.9:
                    timed(phase, lambda: client.get("/healthz"))
                elif pick < 0.95:
                    body = {"problem": "tsp", "instance": _tsp(rng, 30), "solver": "ils",
                            "time_limit": 0.5}
                    response = timed(phase, lambda b=body: client.post("/v1/jobs", json=b))
                    if response is not None and response.status_code == 202:
                        job_ids.append(response.json()["id"])

    with memory_peak(server, phase):
        threads = [threading.Thread(target=client_loop, args=(k,)) for k in range(clients)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    phase.jobs, phase.jobs_lost = len(job_ids), _lost(server.url, job_ids, timeout=300)
    if reld_walls:
        phase.notes.append(f"reld at 0.5 s: median {statistics.median(reld_walls):.2f} s, "
                           f"max {max(reld_walls):.2f} s over {len(reld_walls)} solves")
    with httpx.Client(base_url=server.url, timeout=10) as client:
        _alive(client, phase)
    return phase


def _states(url: str, job_ids: Sequence[str]) -> dict[str, str]:
    out = {}
    with httpx.Client(base_url=url, timeout=30) as client:
        for job_id in job_ids:
            try:
                response = client.get(f"/v1/jobs/{job_id}")
            except httpx.HTTPError:
                out[job_id] = "no answer"
                continue
            out[job_id] = response.json()["state"] if response.status_code == 200 else (
                f"HTTP {response.status_code}")
    return out


#: A backlog still draining (a job ended within this many seconds) is waited for past the
#: ``_lost`` timeout, up to this many times it: a load test's hundreds of queued jobs take
#: minutes on one worker, and a job still queued is late, not lost.
DRAIN_QUIET_S = 60.0
DRAIN_CAP = 3.0


def _lost(url: str, job_ids: Sequence[str], timeout: float) -> int:
    """Jobs lost: after waiting for every job to end, those the server no longer knows (404,
    no answer) or that did not end. The wait is ``timeout``, longer while jobs still end
    (``DRAIN_QUIET_S``, ``DRAIN_CAP``): a job still queued or running after that is counted
    too, nothing should take so long."""
    start = time.monotonic()
    states = _states(url, job_ids)
    ended, last_end = 0, start
    while any(s not in FINAL for s in states.values()):
        now = time.monotonic()
        if now - start > DRAIN_CAP * timeout or (
                now - start > timeout and now - last_end > DRAIN_QUIET_S):
            break
        time.sleep(1.0)
        states = _states(url, job_ids)
        done = sum(s in FINAL for s in states.values())
        if done > ended:
            ended, last_end = done, time.monotonic()
    return sum(s not in FINAL for s in states.values())


def _submit(url: str, count: int, seconds: float) -> list[str]:
    rng = random.Random(count)
    ids = []
    with httpx.Client(base_url=url, timeout=60) as client:
        for _ in range(count):
            body = {"problem": "tsp", "instance": _tsp(rng, 200), "solver": "ils",
                    "time_limit": seconds}
            response = client.post("/v1/jobs", json=body)
            response.raise_for_status()
            ids.append(response.json()["id"])
    return ids


def _wait_running(url: str, job_ids: Sequence[str], timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while "running" not in _states(url, job_ids).values():
        if time.monotonic() > deadline:
            raise RuntimeError("no job started")
        time.sleep(0.3)


def kill_worker(data_dir: Path) -> Phase:
    """kill -9 of one job worker while jobs are in flight: every job ends with a stated
    state (the others run on; the killed one fails, saying its worker died)."""
    phase = Phase("kill -9 of a worker, jobs in flight")
    server = Server(data_dir, {"COSOLVE_MAX_CONCURRENT_JOBS": "2"})
    try:
        server.wait_ready()
        with memory_peak(server, phase):
            ids = _submit(server.url, 6, 3.0)
            _wait_running(server.url, ids)
            workers = [p for p in server.tree() if b"spawn_main" in _cmdline(p)]
            os.kill(workers[-1], signal.SIGKILL)  # a pool worker (not the resource tracker)
            phase.jobs, phase.jobs_lost = len(ids), _lost(server.url, ids, timeout=180)
        states = _states(server.url, ids)
        phase.notes.append(", ".join(f"{states_count} {s}" for s, states_count in
                                     sorted(_count(states.values()).items())))
        with httpx.Client(base_url=server.url, timeout=10) as client:
            _alive(client, phase)
    finally:
        server.stop()
    return phase


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def _count(values: Any) -> dict[str, int]:
    out: dict[str, int] = {}
    for v in values:
        out[v] = out.get(v, 0) + 1
    return out


def kill_server(data_dir: Path) -> Phase:
    """kill -9 of the server (and its workers) with jobs queued and running; a new server on
    the same folder re-queues them and every one ends."""
    phase = Phase("kill -9 of the server, jobs in flight, restart")
    server = Server(data_dir, {"COSOLVE_MAX_CONCURRENT_JOBS": "2"})
    server.wait_ready()
    ids = _submit(server.url, 5, 3.0)
    _wait_running(server.url, ids)
    server.kill()
    again = Server(data_dir, {"COSOLVE_MAX_CONCURRENT_JOBS": "2"}, port=server.port)
    try:
        started = time.monotonic()
        again.wait_ready()
        phase.notes.append(f"restarted in {time.monotonic() - started:.0f} s")
        phase.jobs, phase.jobs_lost = len(ids), _lost(again.url, ids, timeout=240)
        phase.notes.append(", ".join(f"{n} {s}" for s, n in
                                     sorted(_count(_states(again.url, ids).values()).items())))
    finally:
        again.stop()
    return phase


def full_disk(size_mb: int) -> Phase:
    """A server on a tmpfs of ``size_mb``: queued jobs while a filler takes every free byte
    stay queued (none fails), a submission is a 507 with Retry-After, and once the filler is
    gone every job runs."""
    phase = Phase(f"full disk ({size_mb} MB tmpfs)")
    mount = Path(tempfile.mkdtemp(prefix="cosolve-full-"))
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_mb}m", "tmpfs",
                           str(mount)], capture_output=True, text=True)
    if done.returncode != 0:
        phase.notes.append(f"skipped: cannot mount a tmpfs ({done.stderr.strip()[:80]})")
        mount.rmdir()
        return phase
    server = Server(mount / "data", {"COSOLVE_MAX_CONCURRENT_JOBS": "1"})
    try:
        server.wait_ready()
        ids = _submit(server.url, 4, 2.0)
        _fill(mount / "filler")
        with httpx.Client(base_url=server.url, timeout=30) as client:
            refused = client.post("/v1/jobs", json={
                "problem": "tsp", "instance": _tsp(random.Random(0), 30), "solver": "ils",
                "time_limit": 0.5})
            phase.notes.append(f"submit on a full disk: {refused.status_code} (expected "
                               f"507), Retry-After {refused.headers.get('retry-after')}")
            time.sleep(15)  # the disk stays full while queued jobs would have started
            during = _count(_states(server.url, ids).values())
            phase.notes.append("after 15 s full: " + ", ".join(
                f"{n} {s}" for s, n in sorted(during.items())))
            (mount / "filler").unlink()
            phase.jobs, phase.jobs_lost = len(ids), _lost(server.url, ids, timeout=180)
            final = _count(_states(server.url, ids).values())
            phase.jobs_lost += final.get("failed", 0)  # a failure here is a job lost to it
            phase.notes.append("after space returned: " + ", ".join(
                f"{n} {s}" for s, n in sorted(final.items())))
            _alive(client, phase)
    finally:
        server.stop()
        subprocess.run(["umount", str(mount)], check=False)
        shutil.rmtree(mount, ignore_errors=True)
    return phase


def _fill(path: Path) -> None:
    # (the suppress outside: closing a file on a full disk fails too)
    with contextlib.suppress(OSError), open(path, "wb") as fh:
        while True:
            fh.write(b"\0" * 65536)
            fh.flush()


# -- the table -------------------------------------------------------------------------------
def table(phases: list[Phase], prov: dict[str, Any], machine: dict[str, Any]) -> list[str]:
    lines = ["# Reliability under hostile input, load, kills and a full disk", "",
             *header_lines(prov),
             f"- Load average at the start: {machine['load_average_at_start']} on "
             f"{machine['cores']} cores, shared with other work; run niced (nice -n 10), so "
             "latencies are upper bounds",
             "- Servers: loopback uvicorn, default settings but COSOLVE_MAX_TIME_LIMIT=5 "
             "(default 2); "
             "memory: the server's process tree (workers included), resident, peak", "",
             "| phase | requests | 5xx | hangs | wrong | p50 ms | p99 ms | memory peak MB | "
             "jobs | jobs lost | notes |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for phase in phases:
        r = phase.row()
        lines.append(" | ".join(["", r["phase"], *(str("" if r[k] is None else r[k]) for k in (
            "requests", "5xx", "hangs", "wrong", "p50_ms", "p99_ms", "memory_peak_mb",
            "jobs", "jobs_lost")), r["notes"].replace("|", "/"), ""]).strip())
    return lines


def main(argv: Sequence[str] | None = None) -> None:
    parser = parser_for("benchmarks.reliability", __doc__)
    parser.add_argument("--clients", default="30,50", help="load test client counts")
    parser.add_argument("--seconds", type=float, default=20.0, help="each load test's length")
    parser.add_argument("--examples", type=int, default=4, help="fuzzed cases per operation")
    parser.add_argument("--timeout", type=float, default=60.0,
                        help="seconds without an answer that count as a hang")
    parser.add_argument("--gzip-bomb-mb", type=int, default=1024)
    parser.add_argument("--zip-bomb-mb", type=int, default=256)
    parser.add_argument("--disk-mb", type=int, default=48, help="the full disk's tmpfs size")
    parser.add_argument("--skip", default="", help="phases to leave out: corpus,fuzz,load,"
                        "kill,disk")
    parser.add_argument("--out", type=Path, default=RESULTS / "reliability.md")
    args = parser.parse_args(argv)
    skip = set(filter(None, args.skip.split(",")))
    prov, machine = provenance("benchmarks.reliability", argv), machine_info()
    phases: list[Phase] = []
    with tempfile.TemporaryDirectory(prefix="cosolve-reliability-") as tmp:
        server = Server(Path(tmp) / "main")
        try:
            server.wait_ready()
            if "corpus" not in skip:
                phases.append(bad_files(server, args.timeout, args.gzip_bomb_mb << 20,
                                        args.zip_bomb_mb << 20))
            if "fuzz" not in skip:
                phases.append(fuzzing(server, args.timeout, args.examples))
            if "load" not in skip:
                for clients in (int(c) for c in args.clients.split(",") if c):
                    phases.append(load(server, clients, args.seconds, args.timeout))
        finally:
            server.stop()
        if "kill" not in skip:
            phases.append(kill_worker(Path(tmp) / "worker"))
            phases.append(kill_server(Path(tmp) / "server"))
    if "disk" not in skip:
        phases.append(full_disk(args.disk_mb))
    rows = [p.row() for p in phases]
    write_table(args.out, table(phases, prov, machine),
                {"machine": machine, "phases": rows, "out": relative(args.out)}, prov, [])
    print("\n".join(table(phases, prov, machine)))


if __name__ == "__main__":
    main()
