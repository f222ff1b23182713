"""The cosolve HTTP application: ``create_app()`` wires settings, errors, limits and routers.

Run it with ``uvicorn app.main:app``. The API is versioned under ``/v1``; the probes
(``/healthz``, ``/readyz``) and the docs (``/docs``, ``/openapi.json``) sit at the root.
"""

from __future__ import annotations

import importlib.resources
import json
import logging
import signal
import sys
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import anyio
from fastapi import Depends, FastAPI, Request
from fastapi.openapi.docs import (
    get_redoc_html,
    get_swagger_ui_html,
    get_swagger_ui_oauth2_redirect_html,
)
from fastapi.openapi.utils import get_openapi
from fastapi.responses import HTMLResponse
from fastapi.routing import APIRoute
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel, ValidationError
from pydantic.json_schema import models_json_schema

import app.routers.vrp as vrp_routes
from app.concurrency import SOLVE_THREADS
from app.errors import (
    ProblemDetails,
    install_error_handlers,
    problem_responses,
    reject_unknown_query,
)
from app.logs import RequestIdMiddleware, apply_format
from app.metrics import Metrics, MetricsMiddleware
from app.middleware import BodySizeLimitMiddleware
from app.openapi_sse import describe_event_streams
from app.quotas import FairUse
from app.routers import console, flow, health, jobs, routing, scheduling, solvers
from app.security import current_principal, document_security, install_security
from app.settings import Settings, get_settings, settings_problem
from app.slow_clients import BodyReadTimeoutMiddleware
from app.startup import WarmingGateMiddleware, warm_up_plan
from jobs.service import JobService
from solvers.catalog import all_specs
from solvers.contract import SolverSpec
from solvers.device import describe, torch_device_name
from solvers.inflate import configure as configure_inflating
from solvers.routing import isolation
from solvers.tuning import check_tuning

logger = logging.getLogger("cosolve.api")

DESCRIPTION = """\
Combinatorial-optimization solvers behind one API: classical and neural solvers for the
travelling-salesman problem (TSP) and the capacitated vehicle-routing problem (CVRP), also
with time windows (CVRPTW), and exact and entropic (OFT-Sinkhorn) solvers for min-cost flow.

* `GET /v1/solvers` lists the solvers, what they solve and whether they can run here.
* `POST /v1/routing/{tsp|cvrp|cvrptw}/solve` solves a small instance in the request; post it as
  JSON or upload a TSPLIB/CVRPLIB/Solomon (LKH-3 or VRPLIB)/JSON file (optionally gzipped).
* `POST /v1/routing/{tsp|cvrp|cvrptw}/compare` runs several solvers on one instance.
* `POST /v1/routing/vrp/solve` takes VROOM's input document as the body (solver, time_limit,
  seed, geometry=geojson in the query) and answers VROOM's output document, checked, with a
  reason for every unassigned task; `/v1/routing/vrp/compare` runs several solvers on it.
* `POST /v1/flow/min-cost` solves a min-cost-flow network (JSON or a DIMACS/JSON upload) to an
  exactly checked integer flow with a dual certificate; `POST /v1/flow/min-cost/compare` runs
  OR-Tools, networkx and OFT-Sinkhorn on the same network.
* `POST /v1/scheduling/simulate` runs workflow-scheduling policies (GOODRL, HEFT, EFT, …) on
  a Poisson stream of workflows over a VM pool and reports mean flowtime, makespan and
  utilization; `/v1/scheduling/sessions` schedule a live cloud event by event.
* `POST /v1/jobs` (and `/v1/batches`) run large instances and many files in the background,
  with progress (`/events`), cancellation and results kept on disk.

Every error is `application/problem+json` (RFC 9457) and names the `field` at fault.
"""


def _package_version() -> str:
    try:
        return version("cosolve")
    except PackageNotFoundError:  # running from a source tree that was never installed
        return "0.0.0+unknown"


def operation_id(route: APIRoute) -> str:
    """Readable operation ids for generated clients: ``<tag>-<route name>``."""
    return f"{route.tags[0]}-{route.name}" if route.tags else route.name


def _flag_exit_signals(stopping: threading.Event) -> Callable[[], None]:
    """Set ``stopping`` on SIGINT/SIGTERM, then hand the signal on to the server's own
    handler. Uvicorn waits for open responses before it stops, and a job's event stream stays
    open until the job ends, so a bare ``uvicorn app.main:app`` (without
    --timeout-graceful-shutdown) would wait up to the job's time limit (21 s for a
    25 s job); the streams see the flag and end at once. Returns the undo."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    installed: dict[int, Any] = {}
    for sig in (signal.SIGINT, signal.SIGTERM):
        previous = signal.getsignal(sig)
        if not callable(previous):
            continue  # no graceful handler to chain onto (the default ends the process)

        def on_exit(signum: int, frame: Any, previous: Callable[..., Any] = previous) -> None:
            stopping.set()
            previous(signum, frame)

        signal.signal(sig, on_exit)
        installed[sig] = (previous, on_exit)

    def undo() -> None:
        for sig, (previous, ours) in installed.items():
            if signal.getsignal(sig) is ours:
                signal.signal(sig, previous)

    return undo


def _when_warm(app: FastAPI, specs: list[SolverSpec], requeued: int) -> None:
    """After the warm-up: the OpenAPI document built (the first /docs and the metrics' route
    labels need it), and the line that says the server is ready."""
    app.openapi()
    unavailable = [s.name for s in specs if not s.available]
    logger.info("cosolve ready: %d solvers (%s unavailable), %s executor, %d jobs re-queued",
                len(specs), ", ".join(unavailable) or "none", app.state.jobs.executor.name,
                requeued)


@asynccontextmanager
async def _lifespan(app: FastAPI) -> AsyncIterator[None]:
    # Import the solver registry now, so a broken install fails at start-up and the first
    # request does not pay for importing OR-Tools and PyVRP.
    specs = all_specs()
    # A GPU that was asked for and is not there fails the start, not the first request.
    try:
        device = torch_device_name(app.state.settings.device)
    except ValueError as exc:
        raise RuntimeError(f"COSOLVE_DEVICE: {exc}") from None
    check_tuning()  # the solvers' own COSOLVE_* variables (ValueError naming the variable)
    logger.info("cosolve: the torch solvers run on %s", describe(device))
    # The job store and executor open first, so a job store or Ray cluster that cannot be
    # used stops the start at once. Jobs a previous server left queued or running are
    # re-queued: their workers load their own solvers, so they need not wait for ours.
    service = JobService(app.state.settings)
    try:
        requeued = service.start()
    except BaseException:
        service.executor.shutdown()  # (a Ray instance it started would outlive a failed start)
        raise
    app.state.jobs = service
    service.on_job_end = app.state.metrics.observe_job
    app.state.stopping = threading.Event()
    app.state.solve_limiter = anyio.CapacityLimiter(SOLVE_THREADS)
    # Neural solvers load their weights, and numba kernels compile, in the background (about
    # a minute on the first start of a fresh install, seconds later from numba's cache): the
    # port opens at once, /readyz says what is left, and solving requests get a 503 with
    # Retry-After until their solvers are warm (app.startup).
    warm = warm_up_plan(specs, device, app.state.settings.solver_processes)
    app.state.warm_up = warm
    logger.info("cosolve: listening while the solvers warm up (weights, compiled kernels; "
                "about a minute on the first start of a fresh install); /readyz says what is "
                "left")
    warm.start(after=lambda: _when_warm(app, specs, len(requeued)))
    undo = _flag_exit_signals(app.state.stopping)
    try:
        yield
    finally:
        undo()
        warm.cancel()  # a warm-up still running, and its compiling child, stop with us
        isolation.stop()
        service.stop()


#: pydantic writes some bounds (on optional options with a validator of their own) under its
#: own names, which JSON Schema validators and client generators ignore (an OpenAPI check: a
#: time_limit of -1 passed the document and was refused by the server).
_BOUND_KEYWORDS = {"gt": "exclusiveMinimum", "ge": "minimum", "lt": "exclusiveMaximum",
                   "le": "maximum"}


def _standard_bounds(node: Any) -> None:
    """Rename pydantic's ``gt``/``ge``/``lt``/``le`` in number and integer schemas to JSON
    Schema's keywords, everywhere in the document."""
    if isinstance(node, list):
        for item in node:
            _standard_bounds(item)
        return
    if not isinstance(node, dict):
        return
    if node.get("type") in ("number", "integer"):
        for ours, standard in _BOUND_KEYWORDS.items():
            if ours in node and standard not in node:
                node[standard] = node.pop(ours)
    for value in node.values():
        _standard_bounds(value)


def _problem_422s(schema: dict[str, Any]) -> None:
    """FastAPI documents a 422 of its own shape (``HTTPValidationError``) on every operation
    with parameters; ours answer every error as problem details, so say that."""
    problem = problem_responses(422)[422]
    for operations in schema.get("paths", {}).values():
        for operation in operations.values():
            responses = operation.get("responses", {}) if isinstance(operation, dict) else {}
            answer = responses.get("422")
            if answer and "application/json" in answer.get("content", {}):
                only_path = "requestBody" not in operation and all(
                    p.get("in") == "path" for p in operation.get("parameters", []))
                if only_path:  # a string id in the path cannot fail validation
                    del responses["422"]
                    continue
                responses["422"] = {**problem, "description": answer.get("description",
                                                                         problem["description"])}
    components = schema.get("components", {}).get("schemas", {})
    for name in ("HTTPValidationError", "ValidationError"):  # dropped when nothing refers to it
        rest = {k: v for k, v in components.items() if k != name}
        used = json.dumps([schema.get("paths", {}), rest])
        if name in components and f"/{name}\"" not in used:
            del components[name]


def _openapi_with_body_models(app: FastAPI, extra_models: tuple[type[BaseModel], ...]) -> Any:
    """The OpenAPI document plus the schemas that operations reference by hand (bodies read
    from the Request, and the problem-details error body)."""

    def build() -> dict[str, Any]:
        if app.openapi_schema:
            return app.openapi_schema
        schema = get_openapi(
            title=app.title,
            version=app.version,
            description=app.description,
            routes=app.routes,
            tags=app.openapi_tags,
        )
        _, definitions = models_json_schema(
            [(model, "validation") for model in extra_models],
            ref_template="#/components/schemas/{model}",
        )
        components = schema.setdefault("components", {}).setdefault("schemas", {})
        for name, definition in definitions.get("$defs", {}).items():
            components.setdefault(name, definition)
        _standard_bounds(schema)
        _problem_422s(schema)
        describe_event_streams(schema)
        app.openapi_schema = schema
        return schema

    return build


class _UvicornStyle(logging.Formatter):
    """``INFO:     message``, as uvicorn's own lines read."""

    def format(self, record: logging.LogRecord) -> str:
        return f"{record.levelname + ':':<9} {super().format(record)}"


def _show_our_log() -> None:
    """Our INFO lines (start-up, re-queued jobs, job failures) on stderr, in uvicorn's style,
    unless the host application configured logging itself: uvicorn sets up only its own
    loggers, so under ``make serve`` they went nowhere."""
    ours = logging.getLogger("cosolve")
    if ours.handlers or logging.getLogger().handlers:
        return
    handler = logging.StreamHandler()
    handler.setFormatter(_UvicornStyle())
    ours.addHandler(handler)
    ours.setLevel(logging.INFO)


#: Where the documentation pages' scripts and styles are served.
DOCS_STATIC = "/docs-static"


def _serve_docs_offline(app: FastAPI) -> None:
    """``/docs`` (Swagger UI 5) and ``/redoc`` with their scripts served by cosolve itself,
    from the files fastapi-offline's wheel bundles: FastAPI's own pages load them from the
    jsDelivr CDN, so they would stay blank on a machine without internet."""
    static = Path(str(importlib.resources.files("fastapi_offline") / "static"))
    app.mount(DOCS_STATIC, StaticFiles(directory=static), name="docs-static")

    @app.get("/docs", include_in_schema=False)
    async def swagger_ui(request: Request) -> HTMLResponse:
        root = request.scope.get("root_path", "")
        return get_swagger_ui_html(
            openapi_url=f"{root}{app.openapi_url}", title=f"{app.title} - Swagger UI",
            oauth2_redirect_url=f"{root}{app.swagger_ui_oauth2_redirect_url}",
            swagger_js_url=f"{root}{DOCS_STATIC}/swagger-ui-bundle.js",
            swagger_css_url=f"{root}{DOCS_STATIC}/swagger-ui.css",
            swagger_favicon_url=f"{root}{DOCS_STATIC}/favicon.png",
            swagger_ui_parameters=app.swagger_ui_parameters)

    @app.get("/docs/oauth2-redirect", include_in_schema=False)
    async def swagger_ui_redirect() -> HTMLResponse:
        return get_swagger_ui_oauth2_redirect_html()

    @app.get("/redoc", include_in_schema=False)
    async def redoc(request: Request) -> HTMLResponse:
        root = request.scope.get("root_path", "")
        return get_redoc_html(openapi_url=f"{root}{app.openapi_url}",
                              title=f"{app.title} - ReDoc",
                              redoc_js_url=f"{root}{DOCS_STATIC}/redoc.standalone.js",
                              redoc_favicon_url=f"{root}{DOCS_STATIC}/favicon.png",
                              with_google_fonts=False)


def create_app(settings: Settings | None = None) -> FastAPI:
    """Build the application; ``settings`` defaults to the ``COSOLVE_*`` environment."""
    resolved = settings or get_settings()
    _show_our_log()
    apply_format(resolved.log_format)
    app = FastAPI(
        title="cosolve",
        version=_package_version(),
        description=DESCRIPTION,
        generate_unique_id_function=operation_id,
        docs_url=None,  # served by _serve_docs_offline
        redoc_url=None,
        lifespan=_lifespan,
        # the API key first (app.security: /v1 routes only), then the query's names
        dependencies=[Depends(current_principal), Depends(reject_unknown_query)],
        openapi_tags=[
            {"name": "health", "description": "Liveness and readiness probes."},
            {"name": "solvers", "description": "The solver catalogue."},
            {"name": "routing", "description": "TSP, CVRP and CVRPTW: solve and compare."},
            {"name": "flow", "description": "Min-cost flow: solve and compare (OR-Tools, "
             "networkx, OFT-Sinkhorn)."},
            {"name": "scheduling", "description": "Dynamic workflow scheduling: simulate "
             "policies, online sessions."},
            {"name": "jobs", "description": "Long solves and batches: submit, follow, fetch, "
             "cancel."},
        ],
    )
    app.state.settings = resolved
    configure_inflating(resolved.max_inflating_bytes)  # one budget for the process's uploads
    if settings is not None:
        app.dependency_overrides[get_settings] = lambda: resolved
    install_error_handlers(app)
    app.add_middleware(BodySizeLimitMiddleware, max_body_bytes=resolved.max_body_bytes)
    app.add_middleware(BodyReadTimeoutMiddleware, timeout_s=resolved.body_timeout_s)
    install_security(app, resolved)  # keys, CORS, the Host check
    app.state.fair_use = FairUse(resolved, SOLVE_THREADS)  # per-client quotas, fair turns
    # outermost last: the request id covers every line, the metrics every answer (a 413, a 401 too)
    app.add_middleware(WarmingGateMiddleware)
    app.add_middleware(MetricsMiddleware)
    app.add_middleware(RequestIdMiddleware)
    app.state.metrics = Metrics(app)
    _serve_docs_offline(app)
    app.include_router(health.router)
    app.include_router(solvers.router, prefix="/v1")
    app.include_router(vrp_routes.router, prefix="/v1")  # before routing's /{problem}/...
    app.include_router(routing.router, prefix="/v1")
    app.include_router(flow.router, prefix="/v1")
    app.include_router(scheduling.router, prefix="/v1")
    app.include_router(jobs.router, prefix="/v1")
    app.include_router(console.router)  # the web console at / (app/console/)
    app.openapi = _openapi_with_body_models(  # type: ignore[method-assign]
        app, (*routing.OPENAPI_BODY_MODELS, *flow.OPENAPI_BODY_MODELS, *jobs.OPENAPI_BODY_MODELS,
              *scheduling.OPENAPI_BODY_MODELS, *vrp_routes.OPENAPI_BODY_MODELS, ProblemDetails)
    )
    document_security(app)
    return app


def _app_from_environment() -> FastAPI:
    """The app ``uvicorn app.main:app`` serves; bad ``COSOLVE_*`` settings end the process
    with one line naming each (run directly, uvicorn would print pydantic's traceback;
    `cosolve serve` checks the same before it starts uvicorn)."""
    try:
        return create_app()
    except ValidationError as exc:
        print(f"cosolve: {settings_problem(exc)}", file=sys.stderr)
        raise SystemExit(2) from None


app = _app_from_environment()
