"""Console benchmark: how soon the web console draws a solution, and whether the page stays
responsive while a 100,000-node drawing updates.

Starts ``uvicorn app.main:app`` and drives the console at ``/`` in the OS's headless Chromium
(Selenium). For X-n101-k25 (CVRPLIB) and for a generated 100,000-node uniform TSP file, it
picks the file, clicks Solve with one solver, and measures in the page (``performance.now``)
from the click (the upload starts) to the first drawn solution: the upload, the job, its
event stream, the solution's download and the canvas drawing. The worker's read of the file's
coordinates is timed apart. Then the 100K drawing is zoomed and panned (wheel events and arrow
keys, each a redraw at a new level of detail), and the longest main-thread task of the whole
run is read from the page's PerformanceObserver ('longtask', tasks over 50 ms).

The solver is nearest_neighbor (a construction that ends in about a second), so the figures
are the console's and the API's path, not a search's time limit.

Run: ``python -m benchmarks.console`` → ``benchmarks/results/console.md`` (+ .json). Needs
/usr/bin/chromium and /usr/bin/chromedriver. Not a timed test.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from benchmarks.common import (
    REPO,
    check_out,
    header_lines,
    machine_info,
    parser_for,
    provenance,
    write_table,
)
from solvers.routing.generate import random_tsp

X101 = REPO / "tests" / "data" / "X-n101-k25.vrp"
CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
#: The solver's time limit, seconds: nearest_neighbor ends as soon as its tour is built, well
#: before it on a quiet machine (about 1.5 s at 100,000 nodes).
TIME_LIMIT = 60
#: The budget the issue sets for any one main-thread task, milliseconds.
LONG_TASK_BUDGET_MS = 200.0


def write_tsp(path: Path, n: int, seed: int) -> None:
    """A uniform TSP in TSPLIB form, integer coordinates on a 1,000,000 grid (EUC_2D)."""
    coords = np.round(random_tsp(np.random.default_rng(seed), n) * 1_000_000).astype(np.int64)
    lines = [f"NAME : uniform{n}", "TYPE : TSP", f"DIMENSION : {n}",
             "EDGE_WEIGHT_TYPE : EUC_2D", "NODE_COORD_SECTION"]
    lines += [f"{i + 1} {x} {y}" for i, (x, y) in enumerate(coords.tolist())]
    path.write_text("\n".join([*lines, "EOF", ""]))


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_server(data_dir: str) -> tuple[subprocess.Popen[bytes], str]:
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("COSOLVE_")}
    env.update(COSOLVE_DATA_DIR=data_dir, COSOLVE_MAX_CONCURRENT_JOBS="1")
    proc = subprocess.Popen([sys.executable, "-m", "uvicorn", "app.main:app", "--port",
                             str(port), "--log-level", "warning"], cwd=REPO, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        try:
            if httpx.get(base + "/readyz", timeout=5).status_code == 200:
                return proc, base
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    proc.kill()
    raise TimeoutError("the server was not ready within 600 s")


def browser(profile: str) -> Any:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--disable-background-networking", "--disable-component-update",
                "--disable-sync", "--no-first-run", f"--user-data-dir={profile}",
                "--window-size=1280,800"):
        options.add_argument(arg)
    return webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)


def _wait(driver: Any, script: str, timeout: float) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = driver.execute_script(script)
        if value:
            return value
        time.sleep(0.05)
    raise TimeoutError(f"timed out waiting for: {script}")


def first_drawing(driver: Any, base: str, instance: Path, solver: str) -> dict[str, Any]:
    """Pick the file, solve with ``solver``, and time the click → the first drawn plan."""
    from selenium.webdriver.common.by import By

    driver.get(base + "/#solve")
    driver.refresh()
    _wait(driver, "return document.body.dataset.ready", 30)
    driver.execute_script("window.__longtasks = []")
    driver.find_element(By.ID, "solve-file").send_keys(str(instance))
    _wait(driver, f"return document.getElementById('solve-solvers-{solver}')", 120)
    _wait(driver, "return document.getElementById('solve-drop').dataset.readMs", 120)
    driver.execute_script(
        "for (const b of document.querySelectorAll('#solve-solvers input'))"
        f" b.checked = b.value === '{solver}';"
        f"document.getElementById('solve-time').value = '{TIME_LIMIT}';")
    driver.find_element(By.ID, "solve-run").click()
    drawn = _wait(driver, "const c = document.querySelector('canvas.routes');"
                  "return c && c.dataset.drawnAt", 300)
    marks = driver.execute_script("return window.__consoleMarks")
    read_ms = driver.execute_script(
        "return Number(document.getElementById('solve-drop').dataset.readMs)")
    nodes = driver.execute_script("return Number(document.querySelector('canvas.routes')"
                                  ".dataset.nodes)")
    ended, fetched = marks[f"{solver}:ended"], marks[f"{solver}:fetched"]
    return {"instance": instance.name, "nodes": nodes, "solver": solver,
            "read_coordinates_ms": read_ms,
            "click_to_drawn_s": round((float(drawn) - marks["submitted"]) / 1000, 3),
            "click_to_job_end_s": round((ended - marks["submitted"]) / 1000, 3),
            "end_to_plan_fetched_s": round((fetched - ended) / 1000, 3),
            "fetched_to_drawn_s": round((float(drawn) - fetched) / 1000, 3)}


def interact(driver: Any, rounds: int) -> dict[str, Any]:
    """Zoom in and out around points of the drawing and pan with the arrow keys, waiting for
    each redraw; the paint times and the longest task of the whole run."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    canvas = driver.find_element(By.CSS_SELECTOR, "canvas.routes")
    paints = []
    for i in range(rounds):
        delta = -120 if i < rounds // 2 else 120
        driver.execute_script(
            "const c = arguments[0], r = c.getBoundingClientRect();"
            "c.dispatchEvent(new WheelEvent('wheel', {deltaY: arguments[1], clientX: r.left"
            " + r.width * 0.3, clientY: r.top + r.height * 0.6, bubbles: true,"
            " cancelable: true}));", canvas, delta)
        time.sleep(0.15)
        paints.append(float(canvas.get_attribute("data-paint-ms")))
    canvas.click()
    for key in (Keys.ARROW_LEFT, Keys.ARROW_UP, Keys.ARROW_RIGHT, Keys.ARROW_DOWN) * 3:
        canvas.send_keys(key)
        time.sleep(0.1)
        paints.append(float(canvas.get_attribute("data-paint-ms")))
    time.sleep(0.5)
    tasks = driver.execute_script("return window.__longtasks")
    return {"redraws": len(paints), "paint_ms_median": round(statistics.median(paints), 1),
            "paint_ms_max": round(max(paints), 1), "long_tasks": len(tasks),
            "longest_task_ms": round(max(tasks), 1) if tasks else 0.0}


def main(argv: list[str] | None = None) -> int:
    parser = parser_for("benchmarks.console", __doc__)
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks/results/console.md",
                        help="markdown report")
    parser.add_argument("--nodes", type=int, default=100_000, help="size of the large TSP")
    parser.add_argument("--rounds", type=int, default=12, help="zoom steps on the drawing")
    args = parser.parse_args(argv)
    check_out(parser, args.out)
    for path in (CHROMIUM, CHROMEDRIVER):
        if not Path(path).exists():
            parser.error(f"{path} is missing: install the OS packages chromium and "
                         "chromium-driver")
    prov = provenance("benchmarks.console", argv)
    machine = machine_info()
    with tempfile.TemporaryDirectory(prefix="cosolve-console-") as tmp:
        large = Path(tmp) / f"uniform{args.nodes}.tsp"
        write_tsp(large, args.nodes, seed=0)
        proc, base = start_server(str(Path(tmp) / "var"))
        driver = browser(str(Path(tmp) / "profile"))
        try:
            small = first_drawing(driver, base, X101, "nearest_neighbor")
            print(f"X-n101-k25: {small}", file=sys.stderr, flush=True)
            big = first_drawing(driver, base, large, "nearest_neighbor")
            big["file_mb"] = round(large.stat().st_size / 1e6, 1)
            print(f"{large.name}: {big}", file=sys.stderr, flush=True)
            responsive = interact(driver, args.rounds)
            print(f"interaction: {responsive}", file=sys.stderr, flush=True)
        finally:
            driver.quit()
            proc.terminate()
            proc.wait(timeout=30)
    lines = ["# Console: time to the first drawn solution, and responsiveness", "",
             *header_lines(prov),
             f"- Machine: {machine['cpu']}, {machine['cores']} cores, {machine['ram_gib']} GiB;"
             f" load average at the start {machine['load_average_at_start']} (cores shared "
             "with other work when above 0)",
             "- Browser: headless Chromium (OS package) through Selenium, 1280x800; server: "
             f"uvicorn, one job worker; solver nearest_neighbor, time limit {TIME_LIMIT} s, "
             "seed 0", "",
             "| instance | nodes | read coordinates (worker) | click Solve → first drawn | "
             "of which: to the job's end (upload, queue, solve, events) | plan's download | "
             "drawing |", "|---|---:|---:|---:|---:|---:|---:|"]
    for row in (small, big):
        lines.append(f"| {row['instance']} | {row['nodes']:,} | {row['read_coordinates_ms']:.0f}"
                     f" ms | {row['click_to_drawn_s']:.2f} s | {row['click_to_job_end_s']:.2f} s"
                     f" | {row['end_to_plan_fetched_s']:.2f} s | "
                     f"{1000 * row['fetched_to_drawn_s']:.0f} ms |")
    verdict = ("within" if responsive["longest_task_ms"] <= LONG_TASK_BUDGET_MS
               else "OVER")
    lines += ["", f"While the {args.nodes:,}-node drawing is zoomed and panned "
              f"({responsive['redraws']} redraws at changing levels of detail):", "",
              "| measurement | value |", "|---|---:|",
              f"| paint time, median | {responsive['paint_ms_median']:.1f} ms |",
              f"| paint time, max | {responsive['paint_ms_max']:.1f} ms |",
              f"| main-thread tasks over 50 ms, whole run | {responsive['long_tasks']} |",
              f"| longest main-thread task, whole run | {responsive['longest_task_ms']:.0f} ms "
              f"({verdict} the {LONG_TASK_BUDGET_MS:.0f} ms budget) |", "",
              "The whole run counts from loading the page to the last redraw: reading the file "
              "(in a worker), the upload, the event stream, the solution's JSON and every "
              "drawing. The drawing shows the plan once its job is final: the API serves no "
              "plan of a running job."]
    write_table(args.out, lines, {"first_drawn": [small, big], "responsiveness": responsive,
                                  "machine": machine}, prov, [])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
