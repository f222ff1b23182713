"""Which torch device ReLD, PolyNet and OFT-Sinkhorn run on (SIL decodes on the CPU).

The operator chooses it once (``COSOLVE_DEVICE`` for the service, ``--device`` on the command
line): ``cpu``, ``cuda`` or ``cuda:N``, or ``auto`` for the GPU when torch sees one. The choice
is checked when the service starts, so a missing GPU is a clear start-up error, not a failure
in the middle of a request. The classical solvers ignore it.
"""

from __future__ import annotations

import importlib.util
import re
from functools import lru_cache

#: What a device setting may say.
DEVICE_PATTERN = r"^(cpu|auto|cuda(:[0-9]+)?)$"

#: How to install torch where it is missing: its CPU build, since PyPI's plain ``torch`` is
#: the CUDA build of several GB.
TORCH_INSTALL = ("pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu "
                 "(the CPU build; `make serve` installs it, `make serve TORCH=cuda` a GPU one)")


def torch_missing() -> str | None:
    """Why the torch solvers cannot run here, or ``None``: torch is optional (the ``neural``
    extra; a Python or platform without a CPU build of it still serves the others). Looked up
    without importing it, which takes seconds."""
    if importlib.util.find_spec("torch") is None:
        return f"torch is not installed (the neural solvers need it): {TORCH_INSTALL}"
    return None


def spelling_problem(setting: str) -> str | None:
    """What is wrong with how a device setting is written, or ``None`` (no torch needed)."""
    if not re.fullmatch(DEVICE_PATTERN, setting):
        return f"unknown device {setting!r}; use cpu, cuda or cuda:N (or auto)"
    return None


def device_problem(setting: str) -> str | None:
    """What is wrong with a device setting, or ``None``: checked before anything runs, so a
    typo or a missing GPU is one clear sentence, not a torch traceback halfway through."""
    spelling = spelling_problem(setting)
    if spelling is not None:
        return spelling
    if setting in ("cpu", "auto"):
        return None
    import torch  # only here: importing torch takes seconds

    if not torch.cuda.is_available():
        return f"{setting!r} was asked for, but torch sees no CUDA GPU here; use cpu or auto"
    count = torch.cuda.device_count()
    if int(setting.partition(":")[2] or 0) >= count:
        return (f"{setting!r} was asked for, but torch sees {count} CUDA GPU(s): cuda:0 to "
                f"cuda:{count - 1}")
    return None


@lru_cache(maxsize=8)
def torch_device_name(setting: str) -> str:
    """The device ``setting`` names: ``cpu`` as it is (torch is not even imported), ``auto``
    the GPU when torch sees one and else the CPU, ``cuda``/``cuda:N`` when it exists
    (ValueError with ``device_problem``'s sentence otherwise)."""
    problem = device_problem(setting)
    if problem is not None:
        raise ValueError(problem)
    if setting != "auto":
        return setting
    import torch

    return "cuda" if torch.cuda.is_available() and torch.cuda.device_count() else "cpu"


def describe(device: str) -> str:
    """The device and, for a GPU, its name (for logs and the readiness answer)."""
    if not device.startswith("cuda"):
        return device
    import torch

    return f"{device} ({torch.cuda.get_device_name(torch.device(device))})"
