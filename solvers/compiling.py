"""Compile numba kernels in a second process while this one compiles others.

A fresh install compiles every kernel on its first start (numba caches them on disk after),
and compiling is single-threaded: on 2 cores the descent's warm-up took 68 s, half of it the
penalized kicks alone. Where their cache is cold, a child process compiles one group of
kernels while this process compiles the rest; both write numba's on-disk cache, so this process
then loads the child's kernels in milliseconds. The child only saves time: if it cannot start,
fails or is too slow, this process compiles the kernels itself, as before.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

#: How long to wait for the child at the end before compiling here instead (a compile on a
#: loaded 2-core machine takes under a minute).
CHILD_TIMEOUT_S = 300.0


def cache_is_cold(*kernels: Any) -> bool:
    """Whether any of these numba dispatchers has nothing usable in its on-disk cache (no
    index, or an index written for other source). False where numba does not cache them
    (jit disabled, ``cache=False``): a child would not help there."""
    for kernel in kernels:
        cache = getattr(kernel, "_cache", None)
        cache_file = getattr(cache, "_cache_file", None)
        if cache_file is None:
            continue
        try:
            if not cache_file._load_index():
                return True
        except Exception:  # an unreadable index: numba recompiles too
            return True
    return False


@contextmanager
def compiled_beside(target: str, when: bool = True) -> Iterator[None]:
    """Run ``target`` (``"module:function"``, a function without arguments that compiles
    kernels) in a child process while the body runs, and wait for it at the end.

    With ``when`` false (a warm cache) nothing is started. On an exception in the body the
    child is stopped."""
    child = _start(target) if when else None
    try:
        yield
    except BaseException:
        if child is not None:
            child.kill()
            child.wait()
        raise
    if child is not None:
        try:
            child.wait(timeout=CHILD_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
        except BaseException:  # Ctrl-C while waiting: the child goes with us
            child.kill()
            child.wait()
            raise


def _start(target: str) -> subprocess.Popen[bytes] | None:
    module, _, function = target.partition(":")
    # The child sees this process's import path, so it compiles the same source files (a
    # clone run with PYTHONPATH, an editable install) and writes the cache this one reads.
    code = (f"import sys; sys.path[:0] = {sys.path!r}; "
            f"from {module} import {function}; {function}()")
    try:
        return subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    except OSError:
        return None
