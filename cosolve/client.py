"""The HTTP API from Python: ``cosolve.Client(url)``.

    from cosolve import Client

    with Client("http://127.0.0.1:8000") as api:
        answer = api.solve("tests/data/eil51.tsp", "ils", time_limit=1)
        job = api.submit("tests/data/X-n101-k25.vrp", "pyvrp", time_limit=10)
        for event in job.events():          # the job's server-sent progress events
            print(event.status.progress.best_cost if event.status else event.data)
        print(job.solution().cost, job.solution_file("sol"))

An instance is given as a file path (uploaded as it is: .tsp, .vrp, .vrptw, .json, optionally
.gz), a library instance (``cosolve.load_instance``, sent as JSON) or a dict in the API's JSON
form. A refused request raises an ``ApiError`` subclass carrying the server's problem details
(``status``, ``title``, ``detail``, ``field``).
"""

from __future__ import annotations

import gzip
import json
import os
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Literal

import httpx

from cosolve.responses import (
    BatchFileResult,
    BatchStatus,
    CompareResult,
    JobEvent,
    JobStatus,
    ServerUnreachableError,
    SolutionDocument,
    SolverInfo,
    VrpAnswer,
    VrpCompareResult,
    api_error,
)
from solvers.routing.io.documents import instance_to_dict
from solvers.routing.problem import RoutingInstance
from solvers.routing.vrp.solve import VRP_SOLVERS

#: What the client accepts as an instance: a file, a library instance, or the API's JSON form.
InstanceLike = str | os.PathLike[str] | RoutingInstance | dict[str, Any]
PathLike = str | os.PathLike[str]
#: A VROOM input document: a dict, or a .json file (optionally .gz) that holds one.
DocumentLike = str | os.PathLike[str] | dict[str, Any]

#: The server sends a keep-alive comment on an idle event stream every 15 s.
_EVENT_READ_TIMEOUT_S = 45.0
#: Waiting polls the job at first this often, then less often, up to the cap.
_POLL_START_S = 0.1
_POLL_CAP_S = 2.0


class Client:
    """A session with a cosolve server. ``api_key`` is sent as ``Authorization: Bearer``;
    ``timeout`` is the seconds any request may take beyond the solver time it asks for;
    ``transport`` an httpx transport in place of the network (a proxy's, or a test's)."""

    def __init__(self, url: str, api_key: str | None = None, timeout: float = 60.0, *,
                 transport: httpx.BaseTransport | None = None) -> None:
        headers = {"User-Agent": "cosolve-python", "Accept": "application/json"}
        if api_key:
            headers["Authorization"] = f"Bearer {api_key}"
        self.url = url.rstrip("/")
        self.timeout = float(timeout)
        self._http = httpx.Client(base_url=self.url, headers=headers, timeout=self.timeout,
                                  transport=transport)

    # -- plumbing ----------------------------------------------------------------------------
    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the connections (a ``with Client(...)`` block does it on leaving)."""
        self._http.close()

    def __repr__(self) -> str:
        return f"Client({self.url!r})"

    def request(self, method: str, path: str, *, solve_seconds: float = 0.0,
                **kwargs: Any) -> httpx.Response:
        """Send a request; a response with an error status raises its typed ``ApiError``, a
        server that cannot be reached ``ServerUnreachableError``. ``solve_seconds`` extends
        the timeout by the solver time the request asks for."""
        if solve_seconds:
            kwargs.setdefault("timeout", self.timeout + solve_seconds)
        try:
            response = self._http.request(method, path, **kwargs)
        except httpx.TransportError as exc:
            raise ServerUnreachableError(f"cannot reach {self.url}{path}: {exc}") from exc
        if response.status_code >= 400:
            raise _error_of(response)
        return response

    def _json(self, method: str, path: str, **kwargs: Any) -> Any:
        return self.request(method, path, **kwargs).json()

    # -- the catalogue -----------------------------------------------------------------------
    def solvers(self, problem: str | None = None) -> list[SolverInfo]:
        """The registered solvers (those of ``problem``, e.g. ``"cvrp"``, when given), each
        with whether it can run on this server and why not."""
        params = {"problem": problem} if problem else None
        doc = self._json("GET", "/v1/solvers", params=params)
        return [SolverInfo.from_json(s) for s in doc["solvers"]]

    # -- in the request ------------------------------------------------------------------------
    def solve(self, instance: InstanceLike, solver: str = "ortools",
              time_limit: float | None = None, seed: int = 0, *, problem: str | None = None,
              max_vehicles: int | None = None,
              max_solutions: int | None = None) -> SolutionDocument:
        """Solve in the request (``POST /v1/routing/{problem}/solve``): for instances under the
        server's in-request size cap; larger ones are refused with 413 (use ``submit``)."""
        options = _options(solver=solver, time_limit=time_limit, seed=seed,
                           max_solutions=max_solutions)
        kind, body = _body(instance, problem, options, max_vehicles)
        doc = self._json("POST", f"/v1/routing/{kind}/solve", **body,
                         solve_seconds=time_limit or 0.0)
        return SolutionDocument.from_json(doc)

    def compare(self, instance: InstanceLike, solvers: Sequence[str],
                time_limit: float | None = None, seed: int = 0, *, problem: str | None = None,
                reference: float | PathLike | None = None, svg: bool = False,
                max_vehicles: int | None = None) -> CompareResult:
        """Run several solvers one after another on one instance and budget; ``reference`` is
        a known cost, or a known solution's file (NAME.sol, NAME.opt.tour) the server checks
        and costs, and every row gets its gap to it."""
        if isinstance(solvers, str):
            solvers = [s.strip() for s in solvers.split(",") if s.strip()]
        options: dict[str, Any] = _options(solvers=list(solvers), time_limit=time_limit,
                                           seed=seed, svg=svg)
        reference_file = None
        if isinstance(reference, (int, float)) and not isinstance(reference, bool):
            options["reference"] = reference
        elif reference is not None:
            reference_file = Path(reference)
        kind, body = _body(instance, problem, options, max_vehicles, reference_file)
        seconds = (time_limit or 0.0) * len(solvers)
        doc = self._json("POST", f"/v1/routing/{kind}/compare", **body, solve_seconds=seconds)
        return CompareResult.from_json(doc)

    # -- VROOM documents -----------------------------------------------------------------------
    def solve_vrp(self, document: DocumentLike, solver: str = "vroom",
                  time_limit: float | None = None, seed: int = 0, *,
                  geojson: bool = False) -> VrpAnswer:
        """Solve a VROOM document in the request (``POST /v1/routing/vrp/solve``): fleets,
        shipments, skills, time windows, matrices; ``geojson`` adds the routes as a
        FeatureCollection. Documents above the in-request task cap go as ``submit_vrp``."""
        params = _options(solver=solver, time_limit=time_limit, seed=seed,
                          geometry="geojson" if geojson else None)
        doc = self._json("POST", "/v1/routing/vrp/solve", params=params,
                         content=_document_bytes(document),
                         headers={"Content-Type": "application/json"},
                         solve_seconds=time_limit or 0.0)
        return VrpAnswer.from_json(doc)

    def compare_vrp(self, document: DocumentLike, solvers: Sequence[str] | None = None,
                    time_limit: float | None = None, seed: int = 0) -> VrpCompareResult:
        """Several solvers on one VROOM document at equal time, one after another (every
        solver of VROOM documents when ``solvers`` is None)."""
        if isinstance(solvers, str):
            solvers = [s.strip() for s in solvers.split(",") if s.strip()]
        params = _options(solvers=",".join(solvers) if solvers else None,
                          time_limit=time_limit, seed=seed)
        count = len(solvers) if solvers else len(VRP_SOLVERS)
        doc = self._json("POST", "/v1/routing/vrp/compare", params=params,
                         content=_document_bytes(document),
                         headers={"Content-Type": "application/json"},
                         solve_seconds=(time_limit or 0.0) * count)
        return VrpCompareResult.from_json(doc)

    def submit_vrp(self, document: DocumentLike, solver: str = "vroom",
                   time_limit: float | None = None, seed: int = 0) -> Job:
        """A VROOM document as a job (``POST /v1/jobs``, problem ``vrp``): any size the server
        accepts for jobs; ``Job.vrp_solution()`` reads its answer."""
        body = {"problem": "vrp", "instance": json.loads(_document_bytes(document)),
                **_options(solver=solver, time_limit=time_limit, seed=seed)}
        doc = self._json("POST", "/v1/jobs", json=body)
        return Job(self, doc["id"], JobStatus.from_json(doc))

    # -- jobs ----------------------------------------------------------------------------------
    def submit(self, instance: InstanceLike, solver: str = "ortools",
               time_limit: float | None = None, seed: int = 0, *, problem: str | None = None,
               max_vehicles: int | None = None, max_solutions: int | None = None,
               reference_file: PathLike | None = None) -> Job:
        """Submit a job (``POST /v1/jobs``): the server stores the input and answers at once;
        the returned ``Job`` follows it. Any size the server accepts for jobs; a known
        solution's file as ``reference_file`` gives the job's gap."""
        options = _options(solver=solver, time_limit=time_limit, seed=seed,
                           max_solutions=max_solutions)
        ref = Path(reference_file) if reference_file is not None else None
        kind, body = _body(instance, problem, options, max_vehicles, ref)
        if "json" in body:  # a job's JSON body names its problem (the URL does not)
            body["json"] = {"problem": kind, **body["json"]}
        doc = self._json("POST", "/v1/jobs", **body)
        return Job(self, doc["id"], JobStatus.from_json(doc))

    def job(self, job_id: str) -> Job:
        """A handle on an existing job, by its id."""
        return Job(self, job_id)

    def jobs(self, state: str | None = None, batch_id: str | None = None, limit: int = 50,
             offset: int = 0) -> list[JobStatus]:
        """The jobs the server keeps, newest first, a page at a time."""
        params: dict[str, Any] = {"limit": limit, "offset": offset}
        if state:
            params["state"] = state
        if batch_id:
            params["batch_id"] = batch_id
        doc = self._json("GET", "/v1/jobs", params=params)
        return [JobStatus.from_json(j) for j in doc["jobs"]]

    # -- batches -------------------------------------------------------------------------------
    def submit_batch(self, files: PathLike | Sequence[PathLike], solver: str = "ortools",
                     time_limit: float | None = None, seed: int = 0, *,
                     max_vehicles: int | None = None,
                     max_solutions: int | None = None) -> Batch:
        """Many instance files as one batch (``POST /v1/batches``): a list of files, a folder
        (its files), or one .zip/.tar of them. Known solutions among them (NAME.sol,
        NAME.opt.tour) give their instances' gaps; unreadable files are listed as rejected."""
        paths = _batch_paths(files)
        options = _options(solver=solver, time_limit=time_limit, seed=seed,
                           max_vehicles=max_vehicles, max_solutions=max_solutions)
        parts = [("files", (p.name, p.read_bytes())) for p in paths]
        doc = self._json("POST", "/v1/batches", files=parts, data=_form(options))
        return Batch(self, doc["id"])

    def batch(self, batch_id: str) -> Batch:
        """A handle on an existing batch, by its id."""
        return Batch(self, batch_id)


class Job:
    """A job on the server: its status, progress events, cancel and solution."""

    def __init__(self, client: Client, job_id: str, status: JobStatus | None = None) -> None:
        self.client = client
        self.id = job_id
        #: the status last seen (at submission, or by the last call that read it)
        self.last_status = status

    def __repr__(self) -> str:
        state = self.last_status.state if self.last_status else "?"
        return f"<Job {self.id} ({state})>"

    def status(self) -> JobStatus:
        """The job's state and progress now (``GET /v1/jobs/{id}``)."""
        self.last_status = JobStatus.from_json(
            self.client._json("GET", f"/v1/jobs/{self.id}"))
        return self.last_status

    def wait(self, timeout: float | None = None) -> JobStatus:
        """Block until the job is final (succeeded, failed or cancelled) and return its
        status; ``TimeoutError`` after ``timeout`` seconds (the job keeps running)."""
        return _poll(self.status, lambda s: s.final, timeout, f"job {self.id}")

    def events(self) -> Iterator[JobEvent]:
        """The job's server-sent events as they come: ``progress`` on each change, then
        ``end`` (or ``shutdown`` when the server stops first); the iteration ends with it."""
        timeout = httpx.Timeout(self.client.timeout,
                                read=max(self.client.timeout, _EVENT_READ_TIMEOUT_S))
        path = f"/v1/jobs/{self.id}/events"
        try:
            with self.client._http.stream("GET", path, timeout=timeout,
                                          headers={"Accept": "text/event-stream"}) as response:
                if response.status_code >= 400:
                    response.read()
                    raise _error_of(response)
                for event in _sse(response.iter_lines()):
                    if event.status is not None:
                        self.last_status = event.status
                    yield event
                    if event.event in ("end", "shutdown"):
                        return
        except httpx.TransportError as exc:
            raise ServerUnreachableError(f"lost {self.client.url}{path}: {exc}") from exc

    def cancel(self) -> JobStatus:
        """Cancel (``DELETE``): a queued job stops at once, a running one at its solver's next
        check, keeping its best solution so far (``solution()`` then has ``partial``)."""
        self.last_status = JobStatus.from_json(
            self.client._json("DELETE", f"/v1/jobs/{self.id}"))
        return self.last_status

    def solution(self) -> SolutionDocument:
        """The finished job's solution as a document (``ConflictError`` while it runs,
        ``NotFoundError`` when it ended without one); a ``vrp`` job's is ``vrp_solution()``."""
        doc = self.client._json("GET", f"/v1/jobs/{self.id}/solution")
        if "cosolve" in doc and "problem" not in doc:
            raise TypeError(f"job {self.id} solved a VROOM document: read its answer with "
                            "vrp_solution()")
        return SolutionDocument.from_json(doc)

    def vrp_solution(self) -> VrpAnswer:
        """A finished ``vrp`` job's answer: VROOM's output document and the server's check."""
        return VrpAnswer.from_json(self.client._json("GET", f"/v1/jobs/{self.id}/solution"))

    def solution_file(self, fmt: Literal["tour", "sol"] | None = None) -> str:
        """The solution as a file's text: a TSPLIB ``.tour`` for a TSP, a CVRPLIB ``.sol``
        otherwise (the default follows the job's problem)."""
        if fmt is None:
            status = self.last_status or self.status()
            fmt = "tour" if status.problem == "tsp" else "sol"
        response = self.client.request("GET", f"/v1/jobs/{self.id}/solution",
                                       params={"format": fmt})
        return response.text


class Batch:
    """A batch of jobs on the server: its status, the per-file results, cancel."""

    def __init__(self, client: Client, batch_id: str) -> None:
        self.client = client
        self.id = batch_id

    def __repr__(self) -> str:
        return f"<Batch {self.id}>"

    def status(self) -> BatchStatus:
        """Per-file results and the summary now (``GET /v1/batches/{id}``)."""
        return BatchStatus.from_json(self.client._json("GET", f"/v1/batches/{self.id}"))

    def wait(self, timeout: float | None = None) -> BatchStatus:
        """Block until every job of the batch is final; ``TimeoutError`` after ``timeout``."""
        return _poll(self.status, lambda s: s.done, timeout, f"batch {self.id}")

    def results(self) -> list[BatchFileResult]:
        """One row per accepted file (the rejected ones are in ``status().rejected``)."""
        return self.status().results

    def markdown(self) -> str:
        """The results as the server's markdown table with its totals."""
        return self.client.request("GET", f"/v1/batches/{self.id}",
                                   params={"format": "md"}).text

    def jobs(self) -> list[Job]:
        """A handle on each file's job (its solution, its file)."""
        return [Job(self.client, r.job_id) for r in self.results()]

    def cancel(self) -> BatchStatus:
        """Cancel every job of the batch still queued or running."""
        return BatchStatus.from_json(self.client._json("DELETE", f"/v1/batches/{self.id}"))


# -- helpers -------------------------------------------------------------------------------
def _error_of(response: httpx.Response) -> Exception:
    try:
        body = response.json()
    except ValueError:
        body = None
    return api_error(response.status_code, body, response.text, response.reason_phrase,
                     response.headers.get("Retry-After"))


def _poll(read: Any, done: Any, timeout: float | None, what: str) -> Any:
    """Call ``read`` until ``done`` holds, a little less often each time (a short job is
    seen finishing at once, a long one is not polled ten times a second)."""
    deadline = None if timeout is None else time.monotonic() + timeout
    pause = _POLL_START_S
    while True:
        status = read()
        if done(status):
            return status
        if deadline is not None and time.monotonic() >= deadline:
            state = getattr(status, "state", "not done")
            raise TimeoutError(f"{what} is still {state} after {timeout:g} s")
        wait = pause if deadline is None else min(pause, max(deadline - time.monotonic(), 0))
        time.sleep(wait)
        pause = min(pause * 1.5, _POLL_CAP_S)


def _sse(lines: Iterator[str]) -> Iterator[JobEvent]:
    """Server-sent events (the WHATWG format: ``event:``, ``id:``, ``data:`` lines, a blank
    line ends an event, ``:`` lines are comments) as JobEvents."""
    kind, event_id, data = "message", None, []
    for line in lines:
        if not line:
            if data:
                payload = json.loads("\n".join(data))
                status = (JobStatus.from_json(payload)
                          if kind in ("progress", "end") and "id" in payload else None)
                yield JobEvent(event=kind, status=status, data=payload, id=event_id)
            kind, event_id, data = "message", None, []
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if name == "event":
            kind = value
        elif name == "id":
            event_id = value
        elif name == "data":
            data.append(value)


def _options(**values: Any) -> dict[str, Any]:
    """The options a caller set (None means the server's default)."""
    return {k: v for k, v in values.items() if v is not None}


def _form(options: dict[str, Any]) -> dict[str, str]:
    """Options as multipart form fields (lists comma-separated, booleans as true/false)."""
    out = {}
    for key, value in options.items():
        if isinstance(value, bool):
            out[key] = "true" if value else "false"
        elif isinstance(value, (list, tuple)):
            out[key] = ",".join(str(v) for v in value)
        else:
            out[key] = str(value)
    return out


def _body(instance: InstanceLike, problem: str | None, options: dict[str, Any],
          max_vehicles: int | None,
          reference_file: Path | None = None) -> tuple[str, dict[str, Any]]:
    """The problem and the request's keyword arguments: a JSON body for an instance object or
    dict, a multipart upload for a file (and for any instance sent with a reference file)."""
    if isinstance(instance, (str, os.PathLike)):
        path = Path(instance)
        data = path.read_bytes()
        kind = problem or _file_problem(path.name, data)
        upload = (path.name, data)
    else:
        doc = (instance_to_dict(instance) if isinstance(instance, RoutingInstance)
               else dict(instance))
        kind = problem or _document_problem(doc)
        doc.pop("problem", None)
        if max_vehicles is not None:  # a JSON instance carries its own fleet cap
            doc["max_vehicles"] = max_vehicles
            max_vehicles = None
        if reference_file is None:
            return kind, {"json": {**options, "instance": doc}}
        upload = (f"{doc.get('name') or 'instance'}.json",
                  json.dumps({"problem": kind, **doc}).encode())
    fields = _form({**options, **({"max_vehicles": max_vehicles} if max_vehicles else {})})
    files: dict[str, tuple[str, bytes]] = {"file": upload}
    if reference_file is not None:
        files["reference_file"] = (reference_file.name, reference_file.read_bytes())
    return kind, {"files": files, "data": fields}


def _document_bytes(document: DocumentLike) -> bytes:
    """A VROOM document's JSON bytes: a dict encoded, a file sent as it is (gzip inflated,
    since the solve route takes JSON only); the server reads and checks every field."""
    if isinstance(document, dict):
        return json.dumps(document).encode()
    path = Path(document)
    data = path.read_bytes()
    if data[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError) as exc:
            raise ValueError(f"{path.name} is not a readable gzip file ({exc})") from None
    return data


def _document_problem(doc: dict[str, Any]) -> str:
    """The problem of an instance in the API's JSON form: its ``problem``, or its fields."""
    if doc.get("problem"):
        return str(doc["problem"])
    if "time_windows" in doc:
        return "cvrptw"
    return "cvrp" if "demands" in doc else "tsp"


def _file_problem(filename: str, data: bytes) -> str:
    """The problem an instance file holds, read from its header (TSPLIB's TYPE) or its JSON,
    so the request goes to the right endpoint; the server still reads and checks it all."""
    if data[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError) as exc:
            raise ValueError(f"{filename} is not a readable gzip file ({exc})") from None
    text = data.decode("utf-8-sig", errors="replace")
    if text.lstrip().startswith("{"):
        try:
            return _document_problem(json.loads(text))
        except (ValueError, AttributeError):
            raise ValueError(f"{filename} is not a JSON instance; pass problem=") from None
    for line in text[:20_000].splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip().upper() == "TYPE":
            kind = value.strip().upper()
            if kind in ("TSP", "CVRP", "CVRPTW"):
                return kind.lower()
            if kind == "VRPTW":
                return "cvrptw"
            raise ValueError(f"{filename} has TYPE {kind}; cosolve solves TSP, CVRP and "
                             "CVRPTW")
    raise ValueError(f"cannot tell the problem of {filename} (no TYPE line); pass "
                     "problem='tsp', 'cvrp' or 'cvrptw'")


def _batch_paths(files: PathLike | Sequence[PathLike]) -> list[Path]:
    """The files of a batch: the ones named, or a folder's files (sorted)."""
    if isinstance(files, (str, os.PathLike)):
        root = Path(files)
        paths = sorted(p for p in root.iterdir() if p.is_file()) if root.is_dir() else [root]
    else:
        paths = [Path(f) for f in files]
    if not paths:
        raise ValueError(f"no files to send in {files!r}")
    return paths
