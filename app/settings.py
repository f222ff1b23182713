"""Service settings, read from ``COSOLVE_*`` environment variables with embedded defaults.

Every limit that protects the server (body size, in-request problem size, time per request)
lives here so that an operator can tighten or loosen it without touching code, and so the tests
can start a server with small limits.
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path
from typing import Literal, Self

from pydantic import Field, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

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
    max_sync_nodes: int = Field(
        default=5000,
        gt=0,
        description="Largest instance solved inside a request; larger routing instances go "
        "through jobs, larger flow networks through `cosolve flow solve`.",
    )
    max_sync_arcs: int = Field(
        default=1_000_000,
        gt=0,
        description="Most arcs of a min-cost-flow network solved inside a request (reading "
        "takes about 250 MB and 3 s per million); larger ones with the CLI.",
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
        description="Ray cluster address (e.g. ray://head:10001); none starts Ray locally.",
    )
    max_concurrent_jobs: int = Field(
        default_factory=lambda: max(1, (os.cpu_count() or 2) - 1),
        gt=0,
        description="Jobs solved at the same time by the local executor (one core each).",
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
        # bounded both ways (QA sweep: 1e-6 busy-looped a core; 1e10 killed the expiry
        # thread at start, so no job ever expired)
        default=60.0, ge=0.5, le=24 * 3600.0, allow_inf_nan=False,
        description="How often expired jobs are deleted, in seconds (0.5 s to a day).",
    )
    max_batch_files: int = Field(
        default=500, gt=0, description="Most instance files in one batch."
    )

    @field_validator("data_dir", mode="before")
    @classmethod
    def _data_dir_given(cls, value: object) -> object:
        # an empty COSOLVE_DATA_DIR became Path("."): the job store in the working directory
        if isinstance(value, str) and not value.strip():
            raise ValueError("must not be empty (the default is var)")
        return value

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
        # jobs take the same default (QA sweep: every job without a time_limit was refused)
        if self.default_time_limit > self.max_job_time_limit:
            raise ValueError(
                f"default_time_limit ({self.default_time_limit:g} s) is above "
                f"max_job_time_limit ({self.max_job_time_limit:g} s); set "
                "COSOLVE_DEFAULT_TIME_LIMIT lower"
            )
        return self


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process-wide settings (read once); a FastAPI dependency that apps may override."""
    return Settings()
