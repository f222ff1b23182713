"""Small self-contained SVG charts and the number formatting the drawings share.

``cost_plot_svg`` draws the best cost over time of one or more solves as step lines (a job's
progress, a comparison's solvers on one chart). No plotting library: the server and the CLI
write these without matplotlib, and the files stay a few kilobytes.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from html import escape

#: The golden angle in degrees: successive hues land far apart however many are taken.
_GOLDEN_ANGLE = 137.50776
#: Lightness levels taken in turn, so two colours of close hue still differ in brightness.
_LIGHTNESS = (42, 30, 55)


def distinct_colour(k: int) -> str:
    """The ``k``-th of an unbounded sequence of distinct colours (CSS ``hsl``): golden-angle
    hues with three lightness levels in turn, so neighbours differ and 150 colours stay
    pairwise different (integer hues would repeat past 360 routes; one decimal does not
    before several thousand)."""
    hue = (k * _GOLDEN_ANGLE) % 360.0
    lightness = _LIGHTNESS[k % len(_LIGHTNESS)]
    saturation = 75 if k % 2 == 0 else 60
    return f"hsl({hue:.1f},{saturation}%,{lightness}%)"


def readable_number(value: float | None, decimals: int | None = None) -> str:
    """A number as people read it: thousands separators, no exponent (``5,828,660`` rather
    than ``5.82866e+06``), whole numbers without decimals, others with a few; ``n/a`` for
    None, NaN and infinities. ``decimals`` fixes the count (axis ticks share one)."""
    if value is None or not math.isfinite(value):
        return "n/a"
    if decimals is not None:
        return f"{value:,.{max(decimals, 0)}f}"
    magnitude = abs(value)
    if magnitude < 1e15 and value == round(value):
        return f"{round(value):,}"
    if magnitude >= 1000:
        return f"{value:,.1f}"
    if magnitude >= 1:
        return f"{value:,.2f}"
    text = f"{value:.6f}".rstrip("0").rstrip(".")
    return "0" if text in ("0", "-0") else text


def nice_ticks(low: float, high: float, count: int = 5) -> tuple[list[float], int]:
    """Round tick values covering [low, high] (steps of 1, 2 or 5 times a power of ten) and
    the decimals their labels need."""
    if not high > low:
        high = low + (abs(low) * 0.01 or 1.0)
    raw = (high - low) / max(count, 1)
    power = 10.0 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    decimals = max(0, -math.floor(math.log10(step) + 1e-9))
    first = math.ceil(low / step - 1e-9)
    last = math.floor(high / step + 1e-9)
    # multiples of the step, rounded to the decimals shown (0.1 * 3 is 0.30000000000000004)
    return [round(k * step, decimals) + 0.0 for k in range(first, last + 1)], decimals


#: Plot geometry in SVG user units (pixels).
_LEFT, _RIGHT, _TOP, _BOTTOM = 78.0, 16.0, 34.0, 42.0
_LEGEND_W = 150.0


def cost_plot_svg(series: Mapping[str, Sequence[Sequence[float]]], title: str,
                  width: int = 640, height: int = 360, y_label: str = "best cost") -> str:
    """A step plot of best cost against elapsed seconds, one line per named series (each a
    sequence of ``(elapsed, best)`` pairs), with ticked axes, a title and, for several
    series, a legend. Each line is one ``<path class="series">`` carrying ``data-name``; a
    series without points gets a legend entry saying so and no line."""
    if width < 200 or height < 150:
        raise ValueError("a plot needs at least 200 x 150 pixels")
    named = {name: [(float(t), float(c)) for t, c in pts] for name, pts in series.items()}
    drawn = {k: v for k, v in named.items() if v}
    legend = len(named) > 1
    right = _RIGHT + (_LEGEND_W if legend else 0.0)
    plot_w, plot_h = width - _LEFT - right, height - _TOP - _BOTTOM
    times = [t for pts in drawn.values() for t, _ in pts] or [0.0, 1.0]
    costs = [c for pts in drawn.values() for _, c in pts] or [0.0, 1.0]
    x_ticks, x_dec = nice_ticks(0.0, max(max(times), 1e-3), 6)
    y_ticks, y_dec = nice_ticks(min(costs), max(costs), 5)
    x_max = max(x_ticks[-1], max(times))
    y_low, y_high = min(y_ticks[0], min(costs)), max(y_ticks[-1], max(costs))

    def px(t: float) -> float:
        return _LEFT + plot_w * t / x_max

    def py(c: float) -> float:
        return _TOP + plot_h * (1.0 - (c - y_low) / (y_high - y_low))

    parts = [f'<rect x="{_LEFT:g}" y="{_TOP:g}" width="{plot_w:g}" height="{plot_h:g}" '
             'fill="none" stroke="#999"/>']
    for t in x_ticks:
        x = px(t)
        parts.append(f'<line x1="{x:.1f}" y1="{_TOP + plot_h:g}" x2="{x:.1f}" '
                     f'y2="{_TOP + plot_h + 4:g}" stroke="#999"/>'
                     f'<text x="{x:.1f}" y="{_TOP + plot_h + 16:g}" text-anchor="middle">'
                     f"{readable_number(t, x_dec)}</text>")
    for c in y_ticks:
        y = py(c)
        parts.append(f'<line x1="{_LEFT:g}" y1="{y:.1f}" x2="{_LEFT + plot_w:g}" y2="{y:.1f}" '
                     f'stroke="#eee"/><text x="{_LEFT - 6:g}" y="{y + 4:.1f}" '
                     f'text-anchor="end">{readable_number(c, y_dec)}</text>')
    parts.append(f'<text x="{_LEFT + plot_w / 2:.1f}" y="{height - 8:g}" '
                 'text-anchor="middle">elapsed (s)</text>'
                 f'<text x="14" y="{_TOP + plot_h / 2:.1f}" text-anchor="middle" '
                 f'transform="rotate(-90 14 {_TOP + plot_h / 2:.1f})">{escape(y_label)}</text>')
    for k, (name, pts) in enumerate(named.items()):
        colour = distinct_colour(k)
        if pts:
            d = [f"M{px(pts[0][0]):.1f} {py(pts[0][1]):.1f}"]
            for t, c in pts[1:]:  # a step line: the best holds until the next improvement
                d.append(f"H{px(t):.1f}V{py(c):.1f}")
            parts.append(f'<path class="series" data-name="{escape(name)}" d="{"".join(d)}" '
                         f'fill="none" stroke="{colour}" stroke-width="1.8">'
                         f"<title>{escape(name)}: best {readable_number(pts[-1][1])} at "
                         f"{readable_number(pts[-1][0], 2)} s</title></path>")
        if legend:
            y = _TOP + 8 + 16 * k
            x = width - _RIGHT - _LEGEND_W + 10
            # about 22 characters fit the legend's width
            label = name[:21] + ("…" if len(name) > 21 else "") + ("" if pts else " (no cost)")
            parts.append(f'<line x1="{x:g}" y1="{y:g}" x2="{x + 16:g}" y2="{y:g}" '
                         f'stroke="{colour}" stroke-width="3"/><text x="{x + 22:g}" '
                         f'y="{y + 4:g}">{escape(label)}</text>')
    text = escape(title)
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
            f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="11">'
            f"<title>{text}</title>"
            '<rect width="100%" height="100%" fill="#fff"/>'
            f'<text x="{_LEFT:g}" y="20" font-size="13" fill="#111">{text}</text>'
            f'{"".join(parts)}</svg>')
