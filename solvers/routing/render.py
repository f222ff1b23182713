"""Draw a routing solution as a small, self-contained SVG.

Used by the compare endpoint, a job's ``/solution?format=svg``, a batch's zip and the CLI's
``--svg``, so a user can see at a glance what each solver did. The drawing stays compact for a
few thousand nodes: all customer dots are one ``<path>`` of zero-length round-capped segments,
and each route's body is one ``<polyline>`` (a CVRP route's legs from and to the depot are one
thin, faint ``<path>`` beside it, so the star of depot legs does not hide the routes), so the
file grows by about 12 bytes per node rather than one element per node.
"""

from __future__ import annotations

import math
from html import escape
from typing import TYPE_CHECKING

import numpy as np

from solvers.plot import cost_plot_svg, distinct_colour, readable_number
from solvers.routing.problem import CVRPInstance, Instance
from solvers.routing.solution import Solution

if TYPE_CHECKING:  # the type only: drawing needs none of the solving machinery
    from solvers.routing.solve import Comparison

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
    """One colour per route, distinct for any number of routes (``distinct_colour``)."""
    return "#1f77b4" if count == 1 else distinct_colour(k)


def _title(instance: Instance, solution: Solution, real_geometry: bool,
           reference: float | None) -> str:
    """Solver, instance, cost (thousands separators, never an exponent), gap to a known
    cost when there is one, and the number of routes."""
    cost = readable_number(solution.cost)
    words = [
        f"{solution.solver} on {instance.name} ({instance.n:,} nodes)",
        f"cost {cost} ({solution.distance})",
    ]
    if reference is not None and reference > 0 and math.isfinite(solution.cost):
        words.append(f"gap {100.0 * (solution.cost / reference - 1.0):+.2f}%")
    routes = sum(1 for r in solution.routes if len(r))
    if isinstance(instance, CVRPInstance):
        words.append(f"{routes:,} route{'' if routes == 1 else 's'}")
    if not solution.feasible:
        words.append("INFEASIBLE")
    if not real_geometry:
        words.append("no coordinates: nodes drawn on a circle")
    return " · ".join(words)


def solution_svg(instance: Instance, solution: Solution, width: int = 640,
                 reference: float | None = None) -> str:
    """A standalone SVG of ``solution``: nodes as dots, the depot as a square, each route a
    polyline in its own colour (``class="route"``; a CVRP route's depot legs thinner and
    fainter), and a title line naming the solver, the cost and, given a ``reference`` cost,
    the gap to it."""
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
        colour = _route_colour(k, len(routes))
        if depot is not None:
            body = drawable
            # first and last leg as one faint path: at 100+ routes the depot star
            # otherwise covers the middle of the drawing
            (x0, y0), (x1, y1), (xd, yd) = xy[drawable[0]], xy[drawable[-1]], xy[depot]
            parts.append(
                f'<path class="depot-legs" d="M{xd:.1f} {yd:.1f}L{x0:.1f} {y0:.1f}'
                f'M{x1:.1f} {y1:.1f}L{xd:.1f} {yd:.1f}" stroke="{colour}" '
                f'stroke-width="{line / 2:.2g}" stroke-opacity="0.35"/>'
            )
        else:
            body = np.append(drawable, drawable[0])  # close the tour
        parts.append(
            f'<polyline class="route" points="{_points_text(xy[body])}" stroke="{colour}"'
            f' stroke-width="{line:.2g}"><title>route {k + 1}</title></polyline>'
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

    title = escape(_title(instance, solution, real_geometry, reference))
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height:.0f}" '
        f'viewBox="0 0 {width} {height:.0f}" font-family="sans-serif">'
        f"<title>{title}</title>"
        f'<rect width="100%" height="100%" fill="#fff"/>'
        f'<text x="{_MARGIN:g}" y="{_MARGIN + 10:g}" font-size="12" fill="#111">{title}</text>'
        f'<g fill="none" stroke-linejoin="round" stroke-linecap="round">{"".join(parts)}</g>'
        "</svg>"
    )



def comparison_plot_svg(comparison: Comparison, width: int = 640, height: int = 360) -> str:
    """One cost-over-time chart of a comparison: a step line per solver (its progress series,
    ending at its checked cost), each in the legend; a solver without a feasible cost is
    listed there with no line."""
    instance = comparison.instance
    title = (f"best cost over time on {instance.name} ({instance.n:,} nodes, "
             f"{readable_number(comparison.budget.time_limit)} s each)")
    if comparison.reference is not None:
        title += f" · reference {readable_number(comparison.reference)}"
    return cost_plot_svg({row.solver: row.progress for row in comparison.rows}, title,
                         width=width, height=height,
                         y_label=f"best cost ({instance.distance})")
