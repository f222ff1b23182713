"""A solution's route drawing as a notebook shows it: ``cosolve.draw(instance, solution)``.

A ``Solution`` holds no reference to its instance (it is pickled between processes and
compared by value), and the drawing needs the instance's coordinates, so drawing takes both,
as PyVRP's ``plot_solution(solution, data)`` does.
"""

from __future__ import annotations

from pathlib import Path

from solvers.routing.problem import Instance
from solvers.routing.render import solution_svg
from solvers.routing.solution import Solution


class Drawing(str):
    """An SVG document that shows itself: a notebook displays the picture (IPython calls
    ``_repr_svg_``); everywhere else it is the SVG text, written to a file by ``save``."""

    def _repr_svg_(self) -> str:
        return str(self)

    def __repr__(self) -> str:  # the text is kilobytes of coordinates: say what it is
        return f"<Drawing: SVG, {len(self):,} characters>"

    def save(self, path: str | Path) -> Path:
        """Write the SVG to ``path`` (creating its folder) and return the path."""
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(self, encoding="utf-8")
        return target


def draw(instance: Instance, solution: Solution, width: int = 640) -> Drawing:
    """The route drawing of ``solution`` (the library's, or a client answer's
    ``.to_solution()``) on ``instance``: dots for nodes, the depot as a square, one colour
    per route, the solver and cost in the title."""
    if solution.problem != instance.problem or solution.instance_name != instance.name:
        raise ValueError(f"the solution is of {solution.problem} {solution.instance_name!r} "
                         f"but the instance is {instance.problem} {instance.name!r}")
    return Drawing(solution_svg(instance, solution, width))
