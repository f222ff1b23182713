"""Service settings, read from ``COSOLVE_*`` environment variables with embedded defaults.

Every limit that protects the server (body size, in-request problem size, time per request)
lives here so that an operator can tighten or loosen it without touching code, and so the tests
can start a server with small limits.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Self

from pydantic import Field, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

MIB = 1024 * 1024


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
        description="Largest instance solved inside a request; larger ones go through jobs.",
    )
    max_time_limit: float = Field(
        default=300.0,
        gt=0,
        description="Longest time a request may spend solving, in seconds (all solvers of a "
        "comparison together).",
    )
    default_time_limit: float = Field(
        default=10.0, gt=0, description="Time limit used when a request gives none, in seconds."
    )
    max_compare_solvers: int = Field(
        default=6, gt=0, description="Most solvers one comparison request may run."
    )

    @model_validator(mode="after")
    def _default_within_max(self) -> Self:
        # Otherwise every request that omits time_limit would be refused.
        if self.default_time_limit > self.max_time_limit:
            raise ValueError(
                f"default_time_limit ({self.default_time_limit:g} s) is above max_time_limit "
                f"({self.max_time_limit:g} s); set COSOLVE_DEFAULT_TIME_LIMIT lower"
            )
        return self


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process-wide settings (read once); a FastAPI dependency that apps may override."""
    return Settings()
