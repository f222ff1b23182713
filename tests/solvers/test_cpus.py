"""The CPU count read from cgroup files, on folders laid out as the kernel lays them out."""

from __future__ import annotations

from pathlib import Path

import pytest

from solvers import cpus
from solvers.cpus import available_cpus, cgroup_cpu_limit, parse_cfs, parse_cpu_max


@pytest.mark.parametrize(("text", "expected"), [
    ("max 100000\n", None),
    ("200000 100000\n", 2.0),
    ("150000 100000", 1.5),
    ("50000 100000", 0.5),
    ("300000", 3.0),  # no period: the kernel's default, 100 ms
    ("", None),
    ("garbage 100000", None),
    ("0 100000", None),
    ("100000 0", None),
])
def test_cpu_max(text: str, expected: float | None) -> None:
    assert parse_cpu_max(text) == expected


def test_cfs() -> None:
    assert parse_cfs("-1\n", "100000\n") is None
    assert parse_cfs("400000\n", "100000\n") == 4.0
    assert parse_cfs("x", "100000") is None


def _v2(tmp_path: Path, limits: dict[str, str], own: str) -> tuple[Path, Path]:
    root = tmp_path / "cgroup"
    root.mkdir()
    (root / "cgroup.controllers").write_text("cpu memory\n")
    for rel, text in limits.items():
        folder = root / rel
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "cpu.max").write_text(text)
    proc = tmp_path / "proc_cgroup"
    proc.write_text(f"0::{own}\n")
    return root, proc


def test_v2_container_root(tmp_path: Path) -> None:
    """docker run --cpus=2 with a cgroup namespace: the container's cpu.max at the mount."""
    root, proc = _v2(tmp_path, {"": "200000 100000\n"}, "/")
    assert cgroup_cpu_limit(root, proc) == 2.0


def test_v2_tightest_of_the_chain(tmp_path: Path) -> None:
    """A limit on a parent applies to the children under it: the smallest one wins."""
    root, proc = _v2(tmp_path, {"": "max 100000\n", "kube": "150000 100000\n",
                                "kube/pod": "400000 100000\n", "kube/pod/c": "max 100000\n"},
                     "/kube/pod/c")
    assert cgroup_cpu_limit(root, proc) == 1.5


def test_v2_host_path_missing_below_the_mount(tmp_path: Path) -> None:
    """No cgroup namespace: /proc names the host's path, the mount is the container's own."""
    root, proc = _v2(tmp_path, {"": "100000 100000\n"}, "/docker/0123abcd")
    assert cgroup_cpu_limit(root, proc) == 1.0


def test_v2_no_limit(tmp_path: Path) -> None:
    root, proc = _v2(tmp_path, {"": "max 100000\n"}, "/")
    assert cgroup_cpu_limit(root, proc) is None


def test_v1(tmp_path: Path) -> None:
    root = tmp_path / "cgroup"
    mount = root / "cpu,cpuacct"
    (mount / "docker" / "x").mkdir(parents=True)
    for folder, quota in ((mount, "-1"), (mount / "docker" / "x", "250000")):
        (folder / "cpu.cfs_quota_us").write_text(quota + "\n")
        (folder / "cpu.cfs_period_us").write_text("100000\n")
    proc = tmp_path / "proc_cgroup"
    proc.write_text("4:memory:/docker/x\n3:cpu,cpuacct:/docker/x\n0::/\n")
    assert cgroup_cpu_limit(root, proc) == 2.5


def test_no_cgroup_files(tmp_path: Path) -> None:
    assert cgroup_cpu_limit(tmp_path / "none", tmp_path / "none2") is None


def test_available_cpus_capped_by_the_quota(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """The quota rounded up caps the affinity; without a quota the affinity is the answer."""
    monkeypatch.setattr(cpus, "affinity_cpus", lambda: 64)
    root, proc = _v2(tmp_path, {"": "150000 100000\n"}, "/")
    assert available_cpus(root, proc) == 2
    (root / "cpu.max").write_text("10000 100000\n")
    assert available_cpus(root, proc) == 1
    (root / "cpu.max").write_text("max 100000\n")
    assert available_cpus(root, proc) == 64
    monkeypatch.setattr(cpus, "affinity_cpus", lambda: 3)
    (root / "cpu.max").write_text("800000 100000\n")
    assert available_cpus(root, proc) == 3


def test_this_machine() -> None:
    """Whatever this machine is, the answer is a whole number of CPUs it may really use."""
    assert 1 <= available_cpus() <= cpus.affinity_cpus()
