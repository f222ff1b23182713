"""Make domain values JSON-safe: JSON has no NaN or infinity, and numpy scalars are not
serializable. A non-finite number becomes null instead of a 500 at serialization time."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np


def finite_or_none(value: float | None) -> float | None:
    """``value`` as a float, or None when it is missing, NaN or infinite."""
    if value is None:
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def json_safe(value: Any) -> Any:
    """A copy of ``value`` built from JSON types only (used on free-form solver statistics)."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return finite_or_none(value)
    if isinstance(value, Mapping):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [json_safe(v) for v in value]
    return str(value)
