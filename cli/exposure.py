"""What `cosolve serve` checks about where it listens, and how it runs uvicorn against slow
clients."""

from __future__ import annotations

import ipaddress

from jobs.settings import Settings

#: uvicorn's HTTP protocol with a deadline for request headers (COSOLVE_HEADER_TIMEOUT_S):
#: uvicorn has none of its own (app.slow_clients says more). An import string: the CLI does
#: not import the app.
SLOW_CLIENTS_PROTOCOL = "app.slow_clients:HeaderTimeoutProtocol"


def is_loopback(host: str) -> bool:
    """Whether ``--host`` listens on this machine only (127.0.0.0/8, ::1, localhost)."""
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip().strip("[]")).is_loopback
    except ValueError:
        return False  # a name: it may resolve to any interface


def exposure_problem(host: str, settings: Settings, insecure: bool) -> str | None:
    """Why serving on ``host`` is refused: an interface others reach, without API keys,
    unless ``--insecure`` says it is meant (None when fine)."""
    if insecure or is_loopback(host) or settings.api_keys or settings.api_keys_file:
        return None
    return (f"--host {host} serves the API to other machines, and no API keys are set: "
            "anyone who reaches the port could run solves and read every job. Set "
            "COSOLVE_API_KEYS (or COSOLVE_API_KEYS_FILE) to require keys, or pass --insecure "
            "if an open server is meant (a trusted network, a proxy that checks callers)")
