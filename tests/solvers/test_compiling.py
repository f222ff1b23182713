"""The warm-up's second compiling process (solvers.compiling), on a kernel of its own."""

from __future__ import annotations

import importlib
import textwrap
from pathlib import Path

import pytest

from solvers.compiling import cache_is_cold, compiled_beside

KERNEL = textwrap.dedent('''
    from numba import njit


    @njit(cache=True)
    def triple(x):
        return 3 * x


    def compile_it():
        triple(1)
''')


@pytest.fixture
def kernel_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A module with one cached numba kernel, in a fresh folder (so a cold cache)."""
    name = f"cosolve_test_kernel_{tmp_path.name.replace('-', '_')}"
    (tmp_path / f"{name}.py").write_text(KERNEL)
    monkeypatch.syspath_prepend(str(tmp_path))
    return name


def test_a_kernel_is_cold_until_compiled_then_warm(kernel_module: str) -> None:
    module = importlib.import_module(kernel_module)
    assert cache_is_cold(module.triple)
    assert module.triple(2) == 6
    assert not cache_is_cold(module.triple)


def test_the_child_compiles_into_the_cache_this_process_reads(kernel_module: str) -> None:
    module = importlib.import_module(kernel_module)
    with compiled_beside(f"{kernel_module}:compile_it", when=cache_is_cold(module.triple)):
        pass
    # nothing was compiled here, yet the cache holds the kernel: the child wrote it, having
    # found the module on this process's import path
    assert not cache_is_cold(module.triple)
    assert module.triple(5) == 15
    assert module.triple.stats.cache_hits


def test_nothing_starts_on_a_warm_cache_and_a_failing_child_is_harmless(
        kernel_module: str) -> None:
    module = importlib.import_module(kernel_module)
    with compiled_beside(f"{kernel_module}:compile_it", when=False):
        pass
    assert cache_is_cold(module.triple)  # no child ran
    with compiled_beside(f"{kernel_module}:no_such_function"):
        pass
    assert cache_is_cold(module.triple)
    assert module.triple(1) == 3  # compiled here, as without a child


def test_a_plain_function_is_never_cold() -> None:
    assert not cache_is_cold(len, object())
