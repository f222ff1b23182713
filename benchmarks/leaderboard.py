"""The leaderboard of benchmarks/README.md, regenerated from the headline rows of results/*.json.

Each results JSON carries ``headline`` rows (family, set, solver, budget, mean gap %,
instances, reference; for a learned solver the checkpoint and its training minutes), written
by its script; this gathers them into one table per family
and rewrites the part of the README between the two leaderboard markers. Nothing is solved.

    python -m benchmarks.leaderboard            # rewrites benchmarks/README.md
    python -m benchmarks.leaderboard --print    # prints the tables instead
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from benchmarks.common import RESULTS, parser_for, training_label

README = Path(__file__).resolve().parent / "README.md"
FAMILIES = ("TSP", "CVRP", "CVRPTW", "VRP", "flow", "scheduling", "neural")
BEGIN = "<!-- leaderboard: begin (python -m benchmarks.leaderboard) -->"
END = "<!-- leaderboard: end -->"


def rows(results: Path = RESULTS) -> list[dict[str, Any]]:
    """Every headline row, each with the results file it comes from."""
    out = []
    for path in sorted(results.glob("*.json")):
        for row in json.loads(path.read_text()).get("headline", []):
            out.append({**row, "file": path.with_suffix(".md").name})
    return out


def tables(results: Path = RESULTS) -> list[str]:
    """One markdown table per family, the rows sorted by set, budget and gap."""
    found = rows(results)
    lines: list[str] = []
    for family in FAMILIES:
        mine = [r for r in found if r["family"] == family]
        if not mine:
            continue
        mine.sort(key=lambda r: (r["set"], r["budget"], r["gap_percent"] is None,
                                 r["gap_percent"] or 0.0))
        # a family with learned solvers says what training each of their figures stands on
        trained = any("checkpoint" in r for r in mine)
        lines += [f"### {family}", "",
                  "| set | budget | solver | gap % | instances | reference "
                  + ("| training " if trained else "") + "| results |",
                  "|---|---|---|---:|---:|---" + ("|---" if trained else "") + "|---|"]
        for r in mine:
            gap = "–" if r["gap_percent"] is None else f"{r['gap_percent']:.2f}"
            training = ""
            if trained:
                ck = r.get("checkpoint")
                training = f"| {training_label(ck)} " if ck else "| – "
            lines.append(f"| {r['set']} | {r['budget']} | {r['solver']} | {gap} "
                         f"| {r['instances']} | {r['reference']} {training}"
                         f"| [{r['file']}](results/{r['file']}) |")
        lines.append("")
    return lines


def update(readme: Path = README, results: Path = RESULTS) -> str:
    """The README with its leaderboard part replaced by the current tables."""
    text = readme.read_text()
    head, _, rest = text.partition(BEGIN)
    _, _, tail = rest.partition(END)
    return f"{head}{BEGIN}\n\n" + "\n".join(tables(results)) + f"\n{END}{tail}"


def main(argv: list[str] | None = None) -> int:
    parser = parser_for("benchmarks.leaderboard", __doc__)
    parser.add_argument("--print", action="store_true", help="print instead of rewriting")
    args = parser.parse_args(argv)
    if args.print:
        print("\n".join(tables()))
        return 0
    if BEGIN not in README.read_text() or END not in README.read_text():
        parser.error(f"{README} has no leaderboard markers")
    README.write_text(update())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
