"""Service settings, read from ``COSOLVE_*`` environment variables with embedded defaults.

Every limit that protects the server (body size, in-request problem size, time per request)
and every setting of the job layer (data folder, executor, queue) lives here, so that an
operator can tighten or loosen it without touching code and the tests can start a server with
small limits. It sits in jobs/ because the job layer and ``cosolve serve`` read it as the HTTP
app does; ``app.settings`` gives the app its per-process instance.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Literal, Self

from pydantic import Field, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from solvers.cpus import available_cpus
from solvers.device import spelling_problem

MIB = 1024 * 1024


#: The longest time limit any setting may allow: 30 days, as the CLI's --time-limit (OR-Tools'
#: duration overflowed on 1e30 s, a 500 when COSOLVE_MAX_TIME_LIMIT was inf).
MAX_SECONDS = 30 * 24 * 3600.0


class Settings(BaseSettings):
    """Limits of the HTTP layer; the defaults need no setup."""

    model_config = SettingsConfigDict(env_prefix="COSOLVE_", extra="ignore", frozen=True)

    max_body_bytes: int = Field(
        default=64 * MIB, gt=0, description="Largest request body accepted (413 above)."
    )
    max_decompressed_bytes: int = Field(
        default=512 * MIB,
        gt=0,
        description="Largest text an uploaded .gz file may expand to (a guard against gzip bombs).",
    )
    max_inflating_bytes: int = Field(
        default=1024 * MIB,
        gt=0,
        description="Most bytes the server inflates from .gz uploads at once, all requests "
        "together; an upload that finds no room within 5 s is a 503 with Retry-After.",
    )
    max_sync_nodes: int = Field(
        default=5000,
        gt=0,
        description="Largest instance solved inside a request; larger routing instances go "
        "through jobs, larger flow networks through `cosolve flow solve` (or `cosolve flow "
        "compare`).",
    )
    max_sync_arcs: int = Field(
        default=1_000_000,
        gt=0,
        description="Most arcs of a min-cost-flow network one request may carry (solve or "
        "compare, JSON body or file). More is a 413 before the arcs are read (from a DIMACS "
        "file's 'p' line; a JSON body's arcs are counted before any is validated), naming "
        "`cosolve flow solve` (`cosolve flow compare` for a comparison), which has no such "
        "cap. Reading a million arcs takes about 12 s "
        "and 1.1 GB as JSON, 2 s and 0.6 GB as DIMACS.",
    )
    max_time_limit: float = Field(
        default=300.0,
        gt=0,
        le=MAX_SECONDS,
        allow_inf_nan=False,
        description="Longest time a request may spend solving, in seconds (all solvers of a "
        "comparison together).",
    )
    default_time_limit: float = Field(
        default=10.0, gt=0, le=MAX_SECONDS, allow_inf_nan=False,
        description="Time limit used when a request or a job gives none, in seconds.",
    )
    max_sync_simulation_s: float = Field(
        default=30.0, gt=0, le=MAX_SECONDS, allow_inf_nan=False,
        description="Longest a scheduling simulation may be expected to take (by the "
        "policies' cost model) in one request; a longer one is refused with 413 pointing to "
        "POST /v1/scheduling/simulate/jobs, which runs it as a job with progress.",
    )
    max_compare_solvers: int = Field(
        default=6, gt=0, description="Most solvers one comparison request may run."
    )

    device: str = Field(
        default="cpu",
        description="torch device of reld, polynet and oft_sinkhorn: cpu, cuda, cuda:N, "
        "or auto (the GPU when torch sees one). Checked at start-up; classical solvers ignore "
        "it.",
    )

    # -- jobs ------------------------------------------------------------------------------
    data_dir: Path = Field(
        default=Path("var"),
        description="Folder of the job store (SQLite file, job inputs and solutions).",
    )
    executor: Literal["local", "ray"] = Field(
        default="local",
        description="Where jobs run: a local process pool, or Ray (needs the 'ray' extra).",
    )
    ray_address: str | None = Field(
        default=None,
        description="Ray cluster address with COSOLVE_EXECUTOR=ray: ray://host:port (Ray "
        "Client), host:port (the head's GCS), or auto; none starts Ray locally.",
    )
    max_concurrent_jobs: int = Field(
        # the CPUs this process may use (a container's quota), not the host's cores
        default_factory=lambda: max(1, available_cpus() - 1),
        gt=0,
        description="Jobs solved at the same time by the local executor (one core each); by "
        "default one less than the CPUs the service may use (its affinity and cgroup quota).",
    )
    solver_processes: int = Field(
        default_factory=lambda: min(8, available_cpus()),
        ge=0,
        le=64,
        description="Child processes that run in-request OR-Tools solves. OR-Tools holds "
        "Python's interpreter lock for its whole search, so on the server's own threads it "
        "slowed every other solve and request in the process; 0 runs them there all the same. "
        "Each takes about 120 MB; with all of them busy, a solve runs on its thread as before. "
        "Default: the CPUs the service may use, at most 8.",
    )
    max_active_jobs: int = Field(
        default=1000, gt=0, description="Most jobs queued or running at once (429 above; a "
        "batch with more files than this is a 413). Twice the default max_batch_files, so two "
        "full batches can wait together."
    )
    max_job_time_limit: float = Field(
        default=3600.0, gt=0, le=MAX_SECONDS, allow_inf_nan=False,
        description="Longest time limit a job may ask for, in seconds.",
    )
    result_ttl_s: float = Field(
        default=7 * 24 * 3600.0, gt=0, le=10 * 365 * 24 * 3600.0, allow_inf_nan=False,
        description="How long a finished job and its solution are kept, in seconds.",
    )
    purge_interval_s: float = Field(
        # bounded both ways: a microsecond busy-loops a core, and a very long interval
        # overflows the expiry thread's wait, so no job would ever expire
        default=60.0, ge=0.5, le=24 * 3600.0, allow_inf_nan=False,
        description="How often expired jobs are deleted, in seconds (0.5 s to a day).",
    )
    max_batch_files: int = Field(
        default=500, gt=0, description="Most instance files in one batch."
    )
    vrp_speeds_kmh: dict[str, Annotated[float, Field(gt=0, le=1000, allow_inf_nan=False)]] = (
        Field(default_factory=lambda: {"car": 50.0, "truck": 40.0, "bike": 15.0, "foot": 5.0},
              description="VROOM documents with coordinates and no matrices: the travel speed "
              "per vehicle profile, km/h, as JSON ({\"car\": 50, \"truck\": 40}); a profile "
              "not named travels at 50 km/h."))

    # -- logs (docs/operations.md, "Logs") ---------------------------------------------------
    log_format: Literal["text", "json"] = Field(
        default="text",
        description="Log lines as text (uvicorn's style) or one JSON object per line (for "
        "log collectors); `cosolve serve --log-format` sets it.",
    )
    job_log_interval_s: float = Field(
        default=30.0, ge=1.0, le=24 * 3600.0, allow_inf_nan=False,
        description="How often a running job's progress is logged, in seconds (1 s to a day).",
    )

    # -- security and fair use (docs/operations.md, "Security") ----------------------------
    api_keys: str | None = Field(
        default=None, repr=False,
        description="API keys, comma-separated, or @/path/to/file with one key per line. When "
        "set, every /v1 request needs `Authorization: Bearer <key>` and a key sees only its "
        "own jobs, batches and sessions. Keys are 16 or more of A-Z a-z 0-9 . _ ~ + / = -.",
    )
    api_keys_file: Path | None = Field(
        default=None,
        description="A file of API keys, one per line (# starts a comment), added to "
        "COSOLVE_API_KEYS (a mounted secret, say).",
    )
    cors_origins: str = Field(
        default="",
        description="Origins a browser may call the API from (CORS), comma-separated, e.g. "
        "https://app.example.com; empty (the default) allows none, * any.",
    )
    allowed_hosts: str = Field(
        default="",
        description="Host names a server bound to loopback answers besides localhost, "
        "127.0.0.1 and [::1] (any port), comma-separated: the guard against DNS rebinding.",
    )
    max_client_solves: int = Field(
        default=16, gt=0,
        description="In-request solves one client (an API key; an address without keys) may "
        "have at once, running or waiting for their turn (429 above).",
    )
    max_client_running_solves: int = Field(
        default_factory=lambda: max(2, available_cpus()), gt=0,
        description="Of those, how many run at once (the others wait their turn, in order): "
        "the cores' count, at least 2. One client's solves beyond it would only slow every "
        "other client's (40 at once made a 0.2 s solve of another client take 18 s).",
    )
    max_client_jobs: int = Field(
        default=500, gt=0,
        description="Jobs one client may have queued or running at once (429 above).",
    )
    max_client_sessions: int = Field(
        default=32, gt=0,
        description="Online scheduling sessions one client may have open at once (429 above; "
        "the server holds at most 256 in all).",
    )
    max_client_solver_s_per_hour: float = Field(
        default=4 * 3600.0, gt=0, allow_inf_nan=False,
        description="Solver seconds one client may use in a sliding hour, in-request solves "
        "and jobs together (429 above, with the wait in Retry-After).",
    )
    header_timeout_s: float = Field(
        default=10.0, gt=0, le=3600, allow_inf_nan=False,
        description="Longest a client may take to send a request's headers, in seconds "
        "(`cosolve serve`); the connection is closed after.",
    )
    body_timeout_s: float = Field(
        default=30.0, gt=0, le=3600, allow_inf_nan=False,
        description="Longest a request body may pause between two reads, in seconds (408 "
        "after).",
    )

    @field_validator("api_keys_file", mode="before")
    @classmethod
    def _no_keys_file(cls, value: object) -> object:
        # an empty COSOLVE_API_KEYS_FILE is no file (Path("") would be the working folder)
        return None if isinstance(value, str) and not value.strip() else value

    @model_validator(mode="after")
    def _api_keys_readable(self) -> Self:
        # a missing key file or a short key is the start's failure, not every request's
        read_api_keys(self.api_keys, self.api_keys_file)
        return self

    @field_validator("data_dir", mode="before")
    @classmethod
    def _data_dir_given(cls, value: object) -> object:
        # an empty COSOLVE_DATA_DIR became Path("."): the job store in the working directory
        if isinstance(value, str) and not value.strip():
            raise ValueError("must not be empty (the default is var)")
        return value

    @field_validator("ray_address")
    @classmethod
    def _ray_address_form(cls, value: str | None) -> str | None:
        # a mistyped address would be a traceback after the warm-up, or a hang in Ray's
        # connect: the form is checked here, reachability by `cosolve serve`
        if value is None:
            return None
        problem = ray_address_problem(value)
        if problem is not None:
            raise ValueError(problem)
        return value.strip()

    @field_validator("device")
    @classmethod
    def _device_name(cls, value: str) -> str:
        # only the spelling here (importing torch to look for a GPU is the start-up's job)
        problem = spelling_problem(value)
        if problem is not None:
            raise ValueError(problem)
        return value

    @model_validator(mode="after")
    def _default_within_max(self) -> Self:
        # Otherwise every request that omits time_limit would be refused.
        if self.default_time_limit > self.max_time_limit:
            raise ValueError(
                f"default_time_limit ({self.default_time_limit:g} s) is above max_time_limit "
                f"({self.max_time_limit:g} s); set COSOLVE_DEFAULT_TIME_LIMIT lower"
            )
        # jobs take the same default, so every job without a time_limit would be refused
        if self.default_time_limit > self.max_job_time_limit:
            raise ValueError(
                f"default_time_limit ({self.default_time_limit:g} s) is above "
                f"max_job_time_limit ({self.max_job_time_limit:g} s); set "
                "COSOLVE_DEFAULT_TIME_LIMIT lower"
            )
        # an address with the local executor would be silently ignored
        if self.ray_address is not None and self.executor != "ray":
            raise ValueError(
                "COSOLVE_RAY_ADDRESS is set but COSOLVE_EXECUTOR is local: set "
                "COSOLVE_EXECUTOR=ray to run jobs on that cluster, or unset the address"
            )
        return self


def ray_address_problem(address: str) -> str | None:
    """What is wrong with a Ray address's form (None when fine): ``auto``, ``host:port`` or
    ``ray://host:port``."""
    text = address.strip()
    if text == "auto":
        return None
    host_port = text.removeprefix("ray://")
    host, sep, port = host_port.rpartition(":")
    if not sep or not host or "/" in host_port or not (port.isascii() and port.isdigit()) \
            or not 1 <= int(port) <= 65535:
        return (f"{address!r} is not a Ray address: use ray://host:port (Ray Client, port "
                "10001 by default), host:port (the head's GCS, 6379) or auto")
    return None


def ray_host_port(address: str) -> tuple[str, int] | None:
    """The host and port a Ray address names (None for ``auto``)."""
    text = address.strip()
    if text == "auto":
        return None
    host, _, port = text.removeprefix("ray://").rpartition(":")
    return host.strip("[]"), int(port)


def settings_problem(exc: ValidationError) -> str:
    """One line naming each bad ``COSOLVE_*`` variable and why, for a start that refuses."""
    return "; ".join(
        (f"COSOLVE_{'_'.join(map(str, e['loc'])).upper()}" if e["loc"] else "settings")
        + f": {e['msg'].removeprefix('Value error, ')}"
        for e in exc.errors()
    )


#: What a key may be made of (RFC 6750's token characters), and its least length: a short
#: key is guessed, and the store keeps a hash of each key, which only a long one protects.
_KEY = re.compile(r"[A-Za-z0-9._~+/=-]{16,}")


def read_api_keys(keys: str | None, keys_file: Path | None = None) -> frozenset[str]:
    """The API keys of ``COSOLVE_API_KEYS`` (comma-separated, or ``@file``) and
    ``COSOLVE_API_KEYS_FILE`` (one per line, ``#`` comments); empty when none is set.
    ValueError names the source and the key's place, never the key itself."""
    sources: list[tuple[str, list[str]]] = []
    text = (keys or "").strip()
    if text.startswith("@"):
        sources.append((f"COSOLVE_API_KEYS file {text[1:]}", _key_lines(Path(text[1:]))))
    elif text:
        sources.append(("COSOLVE_API_KEYS", [k.strip() for k in text.split(",") if k.strip()]))
    if keys_file is not None:
        sources.append((f"COSOLVE_API_KEYS_FILE {keys_file}", _key_lines(keys_file)))
    found: set[str] = set()
    for source, items in sources:
        for place, key in enumerate(items, 1):
            if not _KEY.fullmatch(key):
                raise ValueError(f"key {place} of {source} is not a key: use 16 or more of "
                                 "A-Z a-z 0-9 . _ ~ + / = - (python -c 'import secrets; "
                                 "print(secrets.token_urlsafe(32))' makes one)")
            found.add(key)
    if sources and not found:
        raise ValueError(f"{sources[0][0]} holds no key")
    return frozenset(found)


def _key_lines(path: Path) -> list[str]:
    try:
        lines = path.read_text().splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"cannot read the API key file {path}: "
                         f"{getattr(exc, 'strerror', None) or exc}") from None
    return [s for line in lines if (s := line.split("#", 1)[0].strip())]
