"""The app's settings: one ``Settings`` per process, as a FastAPI dependency that a test or
an embedding app may override (``create_app(settings)`` does). The settings themselves are
declared in ``jobs.settings``, which the job layer and the CLI read too."""

from __future__ import annotations

from functools import lru_cache

from jobs.settings import Settings, settings_problem

__all__ = ["Settings", "get_settings", "settings_problem"]


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process-wide settings (read once); a FastAPI dependency that apps may override."""
    return Settings()
