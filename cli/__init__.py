"""The ``cosolve`` command line.

Loading ``cli.main`` and building its commands takes half a second or more (typer, numpy, the
solver registry), and a Ctrl-C meanwhile would print a traceback from whichever import it
hit. So when this process is ``cosolve`` (the console script or ``python -m cli.main``), a
Ctrl-C until the command starts (``loaded``) prints the line a Ctrl-C while loading the
solvers prints and exits 130, as it does later on. Other importers (tests) are left alone.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
from pathlib import Path
from types import FrameType

#: What a Ctrl-C before the solve says (the commands say it too while loading the solvers).
INTERRUPTED_LOADING = "interrupted (Ctrl-C) while loading, before solving"


def _interrupted_while_loading(signum: int, frame: FrameType | None) -> None:
    if "--json" in sys.argv[1:]:  # the document every other --json refusal prints
        print(json.dumps({"error": INTERRUPTED_LOADING, "interrupted": True}, indent=2),
              flush=True)
    print(f"error: {INTERRUPTED_LOADING}", file=sys.stderr, flush=True)
    # at once: nothing has started yet, and an exception raised here could be swallowed by
    # the import machinery (or end in a traceback)
    os._exit(130)  # cli.common.EXIT_INTERRUPTED


def loaded() -> None:
    """Give Ctrl-C back to Python (a KeyboardInterrupt, which the commands handle)."""
    if signal.getsignal(signal.SIGINT) is _interrupted_while_loading:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def _started_as_cosolve() -> bool:
    name = Path(sys.argv[0]).name if sys.argv else ""
    # under ``python -m cli.main`` argv[0] is "-m" while the package loads
    return name == "cosolve" or (name == "-m" and "cli.main" in getattr(sys, "orig_argv", ()))


if (_started_as_cosolve() and threading.current_thread() is threading.main_thread()
        and signal.getsignal(signal.SIGINT) is signal.default_int_handler):
    signal.signal(signal.SIGINT, _interrupted_while_loading)
