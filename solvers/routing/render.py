"""Draw a routing solution as a small, self-contained SVG.

Used by the compare endpoint (and usable from the CLI) so a user can see at a glance what each
solver did. The drawing stays compact for a few thousand nodes: all customer dots are one
``<path>`` of zero-length round-capped segments, and each route is one ``<polyline>``, so the
file grows by about 12 bytes per node rather than one element per node.
"""

from __future__ import annotations

import math
from html import escape

import numpy as np

from solvers.routing.problem import CVRPInstance, Instance
from solvers.routing.solution import Solution

#: Space around the drawing and the height of the title band, in SVG user units (pixels).
_MARGIN = 12.0
_TITLE_BAND = 24.0
_NODE_COLOUR = "#333"
_DEPOT_COLOUR = "#d62728"


def node_positions(instance: Instance) -> tuple[np.ndarray, bool]:
    """(n, 2) points to draw and whether they are real coordinates.

    An instance given only as a distance matrix has no geometry, so its nodes are spread evenly
    on a circle; the drawing then shows the route structure, not the geometry.
    """
    if instance.coords is not None:
        return np.asarray(instance.coords, dtype=np.float64), True
    angle = 2.0 * np.pi * np.arange(instance.n) / instance.n
    return np.column_stack((np.cos(angle), np.sin(angle))), False


def _fit_to_canvas(points: np.ndarray, width: float) -> tuple[np.ndarray, float]:
    """Scale points into a ``width``-wide canvas (y pointing up, as in the data); return the
    pixel positions and the canvas height, which follows the data's aspect ratio."""
    low = points.min(axis=0)
    span = points.max(axis=0) - low
    safe_span = np.where(span > 0, span, 1.0)  # all points on one line: avoid dividing by 0
    inner_w = width - 2 * _MARGIN
    scale = inner_w / safe_span[0]
    # Keep very tall or very flat instances readable: at most 1.5 times wider than tall.
    inner_h = float(np.clip(span[1] * scale, inner_w / 1.5, inner_w * 1.5))
    scale = min(scale, inner_h / safe_span[1])
    offset = np.array([(inner_w - span[0] * scale) / 2, (inner_h - span[1] * scale) / 2])
    xy = (points - low) * scale + offset
    xy[:, 1] = inner_h - xy[:, 1]  # SVG's y axis points down
    xy += np.array([_MARGIN, _MARGIN + _TITLE_BAND])
    return xy, inner_h + 2 * _MARGIN + _TITLE_BAND


def _points_text(xy: np.ndarray) -> str:
    """'x,y x,y ...' with one decimal, enough for a screen drawing."""
    flat = np.round(xy, 1).ravel().tolist()
    return " ".join(f"{flat[i]:g},{flat[i + 1]:g}" for i in range(0, len(flat), 2))


def _route_colour(k: int, count: int) -> str:
    """Distinct hues for neighbouring route numbers (golden-angle steps around the wheel)."""
    if count == 1:
        return "#1f77b4"
    return f"hsl({(k * 137.508) % 360:.0f},70%,42%)"


def _title(instance: Instance, solution: Solution, real_geometry: bool) -> str:
    cost = f"{solution.cost:.6g}" if math.isfinite(solution.cost) else "n/a"
    words = [
        f"{solution.solver} on {instance.name} ({instance.n} nodes)",
        f"cost {cost} ({solution.distance})",
    ]
    if not solution.feasible:
        words.append("INFEASIBLE")
    if not real_geometry:
        words.append("no coordinates: nodes drawn on a circle")
    return " · ".join(words)


def solution_svg(instance: Instance, solution: Solution, width: int = 640) -> str:
    """A standalone SVG of ``solution``: nodes as dots, the depot as a square, each route a
    polyline in its own colour, and a title line naming the solver and the cost."""
    if width < 100:
        raise ValueError("width must be at least 100 pixels")
    points, real_geometry = node_positions(instance)
    xy, height = _fit_to_canvas(points, float(width))
    n = instance.n
    dot = float(np.clip(160.0 / math.sqrt(n), 1.2, 6.0))
    line = float(np.clip(dot / 2.5, 0.5, 2.0))

    depot = instance.depot if isinstance(instance, CVRPInstance) else None
    parts: list[str] = []
    routes = [np.asarray(r, dtype=np.int64) for r in solution.routes if len(r)]
    for k, route in enumerate(routes):
        drawable = route[(route >= 0) & (route < n)]  # an infeasible answer may hold bad indices
        if drawable.size == 0:
            continue
        if depot is not None:
            path = np.concatenate(([depot], drawable, [depot]))
        else:
            path = np.append(drawable, drawable[0])  # close the tour
        parts.append(
            f'<polyline points="{_points_text(xy[path])}" stroke="{_route_colour(k, len(routes))}"'
            f' stroke-width="{line:.2g}"/>'
        )

    customers = np.arange(n) if depot is None else np.delete(np.arange(n), depot)
    cxy = np.round(xy[customers], 1).ravel().tolist()
    dots = "".join(f"M{cxy[i]:g} {cxy[i + 1]:g}h0" for i in range(0, len(cxy), 2))
    parts.append(
        f'<path d="{dots}" stroke="{_NODE_COLOUR}" stroke-width="{dot:.2g}" '
        'stroke-linecap="round"/>'
    )
    if depot is not None:
        side = dot * 2.2
        x, y = xy[depot]
        parts.append(
            f'<rect x="{x - side / 2:.1f}" y="{y - side / 2:.1f}" width="{side:.1f}" '
            f'height="{side:.1f}" fill="{_DEPOT_COLOUR}"><title>depot</title></rect>'
        )

    title = escape(_title(instance, solution, real_geometry))
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height:.0f}" '
        f'viewBox="0 0 {width} {height:.0f}" font-family="sans-serif">'
        f"<title>{title}</title>"
        f'<rect width="100%" height="100%" fill="#fff"/>'
        f'<text x="{_MARGIN:g}" y="{_MARGIN + 10:g}" font-size="12" fill="#111">{title}</text>'
        f'<g fill="none" stroke-linejoin="round">{"".join(parts)}</g>'
        "</svg>"
    )
