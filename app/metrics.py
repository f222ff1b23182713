"""``GET /metrics``: Prometheus text, from the standard client library.

What an operator graphs and alerts on: requests by route template and status with latency
histograms, jobs by state and the queue's depth, seconds spent solving per solver (in
requests and in jobs, observed when each solve ends) and the warm-up's state. Each app has
its own ``CollectorRegistry`` (the tests build many apps in one process, and the global
registry refuses a metric registered twice). Routes are labelled by their template
(``/v1/jobs/{job_id}``), never the raw path, so ids do not make a series each; a path no
route serves is labelled ``unmatched``.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Iterator
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4, generate_latest
from prometheus_client.registry import Collector
from starlette.routing import compile_path
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.startup import FAILED, PENDING, READY, WARMING, solving_family
from jobs.store import ACTIVE_STATES, FINAL_STATES, QUEUED

logger = logging.getLogger("cosolve.api")

CONTENT_TYPE = CONTENT_TYPE_PLAIN_0_0_4

#: Request latency buckets, seconds: probes in milliseconds up to solves of minutes.
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
                   120.0, 300.0)
#: Solve time buckets, seconds: a nearest-neighbour tour up to an hour-long job.
SOLVE_BUCKETS = (0.01, 0.05, 0.1, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0,
                 1800.0, 3600.0)
#: Methods labelled as themselves; any other is ``other`` (a client may send any token as a
#: method, and each label value is a series kept for the process's life).
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
#: Solve answers larger than this are not parsed for their solver times (a 5,000-node
#: answer is well under it; the cap bounds the memory a metric may cost).
MAX_PARSED_BYTES = 16 * 1024 * 1024


class Metrics:
    """The app's registry and the metrics its middleware and job monitor update."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.registry = CollectorRegistry()
        self.requests = Counter("cosolve_http_requests", "HTTP requests by route template, "
                                "method and status.", ("route", "method", "status"),
                                registry=self.registry)
        self.latency = Histogram("cosolve_http_request_duration_seconds", "HTTP request "
                                 "latency by route template and method, seconds (to the end "
                                 "of the response body).", ("route", "method"),
                                 buckets=LATENCY_BUCKETS, registry=self.registry)
        self.solver_seconds = Histogram("cosolve_solver_seconds", "Seconds each solve took, "
                                        "by solver (a scheduling policy's name for "
                                        "simulations) and where it ran (request or job), "
                                        "observed when it ends.", ("solver", "source"),
                                        buckets=SOLVE_BUCKETS, registry=self.registry)
        self.registry.register(_StateCollector(app))
        self._routes: list[tuple[Any, str, set[str]]] | None = None
        self._routes_lock = threading.Lock()

    def render(self) -> bytes:
        return generate_latest(self.registry)

    # -- routes ------------------------------------------------------------------------------
    def route_template(self, method: str, path: str) -> str:
        """The template of the route serving ``path`` (documented routes, from the OpenAPI
        document, which lists them with their prefixes), else ``unmatched``."""
        for regex, template, methods in self._templates():
            if regex.match(path) and (method in methods or method == "HEAD"):
                return template
        for regex, template, _ in self._templates():
            if regex.match(path):
                return template  # a 405 on a known route
        return "unmatched"

    def _templates(self) -> list[tuple[Any, str, set[str]]]:
        if self._routes is None:
            with self._routes_lock:
                if self._routes is None:
                    paths = self.app.openapi().get("paths", {})
                    routes = [(compile_path(p)[0], p, {m.upper() for m in ops})
                              for p, ops in paths.items()]
                    # the pages outside the document: docs, their static files, the schema
                    for template in ("/openapi.json", "/docs", "/docs/oauth2-redirect",
                                     "/redoc", "/docs-static/{path:path}", "/metrics"):
                        routes.append((compile_path(template)[0], template, {"GET"}))
                    self._routes = routes
        return self._routes

    # -- solves ------------------------------------------------------------------------------
    def observe_solve(self, solver: str, seconds: float, source: str) -> None:
        if seconds is not None and seconds >= 0:
            self.solver_seconds.labels(solver=solver, source=source).observe(seconds)

    def observe_answer(self, body: bytes) -> None:
        """The solver times of a solving request's answer: ``solver``/``wall_time`` at its
        top (a solve), or per row (a comparison's solvers, a simulation's policies)."""
        try:
            doc = json.loads(body)
        except ValueError:
            return
        if not isinstance(doc, dict):
            return
        for solver, seconds in _solver_times(doc):
            self.observe_solve(solver, seconds, "request")

    def observe_job(self, record: Any) -> None:
        """A job that ended: its solver's time from start to finish."""
        if record.started_at is not None and record.finished_at is not None:
            self.observe_solve(record.solver, record.finished_at - record.started_at, "job")


def _solver_times(doc: dict[str, Any]) -> Iterator[tuple[str, float]]:
    if isinstance(doc.get("solver"), str) and isinstance(doc.get("wall_time"), int | float):
        yield doc["solver"], float(doc["wall_time"])
        return
    rows = doc.get("rows")
    if not isinstance(rows, list):
        return
    for row in rows:
        if not isinstance(row, dict):
            continue
        name = row.get("solver", row.get("policy"))
        seconds = row.get("wall_time")
        if isinstance(name, str) and isinstance(seconds, int | float):
            yield name, float(seconds)


class _StateCollector(Collector):
    """Jobs by state, the queue's depth and the warm-up's state, read at each scrape."""

    def __init__(self, app: Any) -> None:
        self.app = app

    def collect(self) -> Iterator[GaugeMetricFamily]:
        service = getattr(self.app.state, "jobs", None)
        if service is not None:
            by_state = GaugeMetricFamily("cosolve_jobs", "Jobs in the store by state.",
                                         labels=("state",))
            queued = 0
            try:
                for state in (*ACTIVE_STATES, *FINAL_STATES):
                    count = service.store.list(state=state, limit=0)[1]
                    by_state.add_metric((state,), count)
                    if state == QUEUED:
                        queued = count
            except Exception:  # a store that cannot be read (a full disk) leaves them out
                logger.warning("metrics: the job store could not be read", exc_info=True)
            else:
                yield by_state
                yield GaugeMetricFamily("cosolve_jobs_queue_depth", "Jobs waiting for a "
                                        "worker.", value=queued)
        warm = getattr(self.app.state, "warm_up", None)
        if warm is not None:
            yield GaugeMetricFamily("cosolve_warm_up_done", "1 once the solvers' warm-up has "
                                    "ended, 0 while it runs.", value=1.0 if warm.done else 0.0)
            yield GaugeMetricFamily("cosolve_warm_up_seconds", "Seconds the warm-up took (so "
                                    "far, while it runs).", value=warm.elapsed())
            items = GaugeMetricFamily("cosolve_warm_up_items", "Solvers (and policy models) "
                                      "to warm, by state.", labels=("state",))
            snapshot = warm.snapshot()["items"]
            for state in (PENDING, WARMING, READY, FAILED):
                items.add_metric((state,), sum(1 for i in snapshot if i["state"] == state))
            yield items


class MetricsMiddleware:
    """Count and time every HTTP request by route template; read the solver times out of
    solving requests' answers."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        metrics: Metrics | None = None
        if scope["type"] == "http":
            metrics = getattr(getattr(scope.get("app"), "state", None), "metrics", None)
        if metrics is None:
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500  # unless a response starts: an exception leaves the app
        keep = solving_family(scope["method"], scope["path"]) is not None
        body: list[bytes] = []
        size = 0

        async def observing_send(message: Message) -> None:
            nonlocal status, keep, size
            if message["type"] == "http.response.start":
                status = message["status"]
                keep = keep and status == 200
            elif message["type"] == "http.response.body" and keep:
                chunk = message.get("body", b"")
                size += len(chunk)
                if size > MAX_PARSED_BYTES:
                    keep, body[:] = False, []
                else:
                    body.append(chunk)
            await send(message)

        try:
            await self.app(scope, receive, observing_send)
        finally:
            method = scope["method"] if scope["method"] in METHODS else "other"
            route = metrics.route_template(method, scope["path"])
            metrics.requests.labels(route=route, method=method, status=str(status)).inc()
            metrics.latency.labels(route=route, method=method).observe(
                time.perf_counter() - started)
            if keep and body:
                metrics.observe_answer(b"".join(body))
