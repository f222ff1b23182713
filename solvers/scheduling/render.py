"""A Gantt chart of a simulated schedule as a small self-contained SVG: one row per VM, one bar
per task, coloured by workflow, so a user sees where each policy put the work."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from solvers.scheduling.simulator import SimResult, VMPool
from solvers.scheduling.workflow import Workflow

_PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
            "#7f7f7f", "#bcbd22", "#17becf")


#: Workflows a Gantt chart draws unless told otherwise (the CLI's --gantt).
GANTT_WORKFLOWS = 10


def gantt_svg(result: SimResult, pool: VMPool, templates: Sequence[Workflow],
              workflows: int = GANTT_WORKFLOWS, width: int = 900) -> str:
    """Bars of the first ``workflows`` workflows' tasks (the schedule must be recorded). A
    bar's tooltip names the task by its id, as the schedule table, sessions and the CLI do
    (not by its internal index); ``templates`` are the simulated ones."""
    rows = [r for r in (result.schedule or []) if r[0] < workflows]
    kind = {uid: k for uid, k, _, _ in (result.workflows or [])}

    def task_id(uid: int, task: int) -> str:
        k = kind.get(uid)
        return str(task) if k is None else templates[k].ids[task]

    # the title counts the workflows drawn, not the ones asked for (not "first 50" of 12)
    workflows = len({r[0] for r in rows})
    row_h, left, top = 14, 70, 26
    height = top + row_h * pool.size + 24
    end = max((r[5] for r in rows), default=1.0) or 1.0
    scale = (width - left - 10) / end
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="10">',
           f'<text x="4" y="16" font-size="12">{escape(result.policy)}: first {workflows} '
           f'workflow{"s" if workflows != 1 else ""}, {end:,.0f} s</text>']
    for m, v in enumerate(pool.speeds):
        y = top + m * row_h
        out.append(f'<text x="4" y="{y + 10}">VM {m} ({v:g})</text>')
        out.append(f'<line x1="{left}" y1="{y + row_h}" x2="{width - 10}" y2="{y + row_h}" '
                   'stroke="#eee"/>')
    for uid, task, vm, _ready, start, finish in rows:
        x = left + start * scale
        w = max(0.5, (finish - start) * scale)
        out.append(f'<rect x="{x:.1f}" y="{top + vm * row_h + 2}" width="{w:.1f}" '
                   f'height="{row_h - 4}" fill="{_PALETTE[uid % len(_PALETTE)]}">'
                   f'<title>workflow {uid} task {escape(task_id(uid, task))}: '
                   f'{start:.1f}–{finish:.1f} s</title></rect>')
    out.append(f'<text x="{left}" y="{height - 6}">0 s</text>'
               f'<text x="{width - 60}" y="{height - 6}">{end:,.0f} s</text></svg>')
    return "".join(out)
