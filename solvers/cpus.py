"""How many CPUs this process may use: the fewest of its CPU affinity and its cgroup's CPU
quota (``docker run --cpus``, a Kubernetes CPU limit), not the host's core count.

``os.cpu_count()`` reports the host's cores: a container held to 2 CPUs on a 64-core host
would start 63 job workers sharing 2 CPUs, each solve getting a thirtieth of the time its
limit promised. Both cgroup versions are read: v2's ``cpu.max`` and v1's
``cpu.cfs_quota_us``/``cpu.cfs_period_us``, for the process's own cgroup and every one above
it (a limit set on a parent applies too).
"""

from __future__ import annotations

import math
import os
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")
PROC_CGROUP = Path("/proc/self/cgroup")


def parse_cpu_max(text: str) -> float | None:
    """A cgroup v2 ``cpu.max`` (``"<quota> <period>"`` in microseconds, quota ``max`` for
    none) as a number of CPUs; None when it sets no limit or cannot be read as one."""
    parts = text.split()
    if not parts or parts[0] == "max":
        return None
    period = parts[1] if len(parts) > 1 else "100000"  # the kernel's default period
    return _ratio(parts[0], period)


def parse_cfs(quota: str, period: str) -> float | None:
    """cgroup v1's ``cpu.cfs_quota_us`` (-1 for none) over ``cpu.cfs_period_us`` as CPUs."""
    return _ratio(quota.strip(), period.strip())


def _ratio(quota: str, period: str) -> float | None:
    try:
        q, p = int(quota), int(period)
    except ValueError:
        return None
    return q / p if q > 0 and p > 0 else None


def _own_paths(proc_cgroup: Path) -> dict[str, str]:
    """The process's cgroup path per controller (``""`` for v2's single hierarchy)."""
    paths: dict[str, str] = {}
    try:
        lines = proc_cgroup.read_text().splitlines()
    except OSError:
        return paths
    for line in lines:
        fields = line.split(":", 2)
        if len(fields) == 3:
            for controller in fields[1].split(",") if fields[1] else [""]:
                paths[controller] = fields[2]
    return paths


def _chain(mount: Path, own: str) -> list[Path]:
    """The folders of the process's cgroup and of each above it, up to ``mount``. In a
    container the mount is often the container's own cgroup while /proc still names the
    host's path, which then does not exist below the mount: the mount alone is read."""
    chain: list[Path] = []
    here = mount / own.strip("/") if own.strip("/") else mount
    while here != mount and mount in here.parents:
        if here.is_dir():
            chain.append(here)
        here = here.parent
    return [*chain, mount]


def _read(path: Path) -> str | None:
    try:
        return path.read_text()
    except OSError:
        return None


def cgroup_cpu_limit(root: Path = CGROUP_ROOT, proc_cgroup: Path = PROC_CGROUP) -> float | None:
    """The tightest CPU quota over the process's cgroup and its parents, in CPUs (1.5 for
    150000/100000); None where no quota is set or no cgroup can be read (not Linux)."""
    own = _own_paths(proc_cgroup)
    limits: list[float] = []
    if (root / "cgroup.controllers").exists():  # v2: one hierarchy
        for folder in _chain(root, own.get("", "/")):
            text = _read(folder / "cpu.max")
            limit = parse_cpu_max(text) if text is not None else None
            if limit is not None:
                limits.append(limit)
    else:  # v1: the cpu controller's own hierarchy
        mount = next((root / name for name in ("cpu", "cpu,cpuacct", "cpuacct,cpu")
                      if (root / name / "cpu.cfs_quota_us").exists()), None)
        if mount is not None:
            for folder in _chain(mount, own.get("cpu", "/")):
                quota, period = _read(folder / "cpu.cfs_quota_us"), _read(
                    folder / "cpu.cfs_period_us")
                limit = parse_cfs(quota, period) if quota and period else None
                if limit is not None:
                    limits.append(limit)
    return min(limits) if limits else None


def affinity_cpus() -> int:
    """CPUs the scheduler lets this process run on (``taskset``, ``docker run --cpuset-cpus``)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0)) or 1
    return os.cpu_count() or 1


def available_cpus(root: Path = CGROUP_ROOT, proc_cgroup: Path = PROC_CGROUP) -> int:
    """Whole CPUs this process may use, at least 1: its affinity, capped by its cgroup quota
    rounded up: a 1.5-CPU quota runs two workers at three quarters of their speed rather
    than leaving half a CPU unused."""
    cpus = affinity_cpus()
    limit = cgroup_cpu_limit(root, proc_cgroup)
    if limit is not None:
        cpus = min(cpus, max(1, math.ceil(limit)))
    return max(1, cpus)
