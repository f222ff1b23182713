"""The console in a real browser: the OS's headless Chromium, driven by Selenium, against a
real server. Each view's screenshot is saved under out/screenshots/ (git-ignored) as the run's
artefact. Without Chromium these tests skip, saying why; under CI (CI=true) they fail, since
.ci/run installs it."""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.app.conftest import uvicorn_server

pytestmark = pytest.mark.heavy

REPO = Path(__file__).resolve().parents[3]
DATA = REPO / "tests" / "data"
SHOTS = REPO / "out" / "screenshots"
CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
#: The best known cost of X-n101-k25 (CVRPLIB), the cost of X-n101-k25.sol.
X101_BEST = 27591
FINAL = ("succeeded", "failed", "cancelled", "refused")


def _browser_or_skip() -> None:
    missing = [str(p) for p in (CHROMIUM, CHROMEDRIVER) if not p.exists()]
    if not missing:
        return
    reason = (f"{' and '.join(missing)} missing: install the OS packages chromium and "
              "chromium-driver (.ci/run does)")
    if os.environ.get("CI") == "true":
        pytest.fail(reason)
    pytest.skip(reason)


@pytest.fixture(scope="module")
def console_url() -> Iterator[str]:
    """A server of its own, two jobs at once, so that two solvers race side by side."""
    _browser_or_skip()
    with uvicorn_server({"COSOLVE_MAX_CONCURRENT_JOBS": "2"}) as url:
        yield url


@pytest.fixture(scope="module")
def browser(console_url: str) -> Iterator[Any]:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="cosolve-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--disable-background-networking", "--disable-component-update",
                "--disable-sync", "--no-first-run", f"--user-data-dir={profile}",
                "--window-size=1280,800"):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def wait_for(check: Callable[[], Any], timeout: float = 30.0, what: str = "") -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            value = check()
        except Exception:  # an element not there yet, or replaced while read
            value = None
        if value:
            return value
        time.sleep(0.2)
    pytest.fail(f"timed out after {timeout:g} s waiting for {what}")


def shot(driver: Any, name: str, width: int = 1280) -> None:
    """The whole page at this width, as out/screenshots/NAME.png."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    height = driver.execute_script("return document.documentElement.scrollHeight")
    driver.set_window_size(width, min(int(height) + 100, 4000))
    time.sleep(0.3)
    driver.save_screenshot(str(SHOTS / f"{name}.png"))
    driver.set_window_size(1280, 800)


def open_view(driver: Any, url: str, view: str) -> None:
    from selenium.webdriver.common.by import By

    driver.get(f"{url}/#{view}")
    driver.refresh()  # a fresh page per view: no state carried from the test before
    wait_for(lambda: driver.find_element(By.TAG_NAME, "body").get_attribute("data-ready"),
             what="the console to start")


def choose(driver: Any, container: str, names: list[str]) -> None:
    """Tick exactly these boxes of a solver or policy list."""
    from selenium.webdriver.common.by import By

    wait_for(lambda: driver.find_elements(By.CSS_SELECTOR, f"#{container} input"),
             what=f"the list {container}")
    for box in driver.find_elements(By.CSS_SELECTOR, f"#{container} input[type=checkbox]"):
        if box.is_selected() != (box.get_attribute("value") in names):
            box.click()


def rows(driver: Any, table: str) -> list[Any]:
    from selenium.webdriver.common.by import By

    return driver.find_elements(By.CSS_SELECTOR, f"#{table} tbody tr")


def upload_x101(driver: Any, solvers: list[str], time_limit: str) -> None:
    from selenium.webdriver.common.by import By

    driver.find_element(By.ID, "solve-ref").send_keys(str(DATA / "X-n101-k25.sol"))
    driver.find_element(By.ID, "solve-file").send_keys(str(DATA / "X-n101-k25.vrp"))
    wait_for(lambda: driver.find_element(By.CSS_SELECTOR, "#solve-detected dl")
             .get_attribute("data-kind") == "cvrp", what="the detected problem")
    wait_for(lambda: driver.find_element(By.ID, "solve-solvers-pyvrp"),
             what="the CVRP solvers")
    choose(driver, "solve-solvers", solvers)
    field = driver.find_element(By.ID, "solve-time")
    field.clear()
    field.send_keys(time_limit)
    driver.find_element(By.ID, "solve-run").click()


def test_two_solvers_race_on_x101(browser: Any, console_url: str) -> None:
    from selenium.webdriver.common.by import By

    open_view(browser, console_url, "solve")
    upload_x101(browser, ["ortools", "pyvrp"], "3")
    wait_for(lambda: len(rows(browser, "solve-table")) == 2 and all(
        r.get_attribute("data-state") in FINAL for r in rows(browser, "solve-table")),
        timeout=60, what="both jobs to end")
    # the chart holds one series per solver
    chart = browser.find_element(By.ID, "solve-chart")
    wait_for(lambda: chart.get_attribute("data-series") == "2", what="two series")
    # while they ran, a best plan so far was drawn (ortools and pyvrp publish theirs): the
    # redraws are counted only before the final plan arrives
    redraws = {d.get_attribute("data-solver"): int(d.get_attribute("data-redraws"))
               for d in browser.find_elements(By.CSS_SELECTOR, "canvas.routes")}
    assert max(redraws.values()) >= 1, redraws
    for row in rows(browser, "solve-table"):
        solver = row.get_attribute("data-solver")
        assert row.get_attribute("data-state") == "succeeded", row.text
        job = httpx.get(f"{console_url}/v1/jobs/{row.get_attribute('data-job')}").json()
        solution = httpx.get(f"{console_url}{job['links']['solution']}").json()
        routes = [r for r in solution["routes"] if r]
        drawing = browser.find_element(By.CSS_SELECTOR, f"canvas.routes[data-solver='{solver}']")
        drawn = str(len(routes))
        wait_for(lambda d=drawing, n=drawn: d.get_attribute("data-routes") == n
                 and d.get_attribute("data-plan") == "final",
                 what=f"{solver}'s {drawn} routes drawn")
        # the gap to the uploaded known solution, as the service computed it
        assert job["reference"] == X101_BEST
        gap = 100 * (job["cost"] / X101_BEST - 1)
        assert abs(job["gap_percent"] - gap) < 1e-9
        assert f"{gap:.2f}%" in row.text
        assert float(row.get_attribute("data-gap")) == pytest.approx(gap, abs=1e-4)
    detected = browser.find_element(By.ID, "solve-detected").text
    assert "27,591" in detected and "CVRP" in detected and "EUC_2D" in detected
    shot(browser, "solve-and-compare")
    shot(browser, "solve-and-compare-phone", width=400)


def test_cancel_keeps_the_best(browser: Any, console_url: str) -> None:
    from selenium.webdriver.common.by import By

    open_view(browser, console_url, "solve")
    upload_x101(browser, ["pyvrp"], "60")
    row = wait_for(lambda: rows(browser, "solve-table")[0], what="the job's row")
    wait_for(lambda: row.get_attribute("data-state") == "running"
             and row.find_elements(By.TAG_NAME, "td")[2].text != "–",
             timeout=40, what="a first best cost")
    row.find_element(By.TAG_NAME, "button").click()
    wait_for(lambda: rows(browser, "solve-table")[0].get_attribute("data-state") == "cancelled",
             timeout=30, what="the cancel")
    drawing = browser.find_element(By.CSS_SELECTOR, "canvas.routes[data-solver='pyvrp']")
    wait_for(lambda: int(drawing.get_attribute("data-routes")) > 0
             and drawing.get_attribute("data-plan") == "final", what="the best drawn")
    assert "best kept" in rows(browser, "solve-table")[0].text
    job_id = rows(browser, "solve-table")[0].get_attribute("data-job")
    solution = httpx.get(f"{console_url}/v1/jobs/{job_id}/solution").json()
    assert solution["partial"] is True and solution["feasible"] is True
    assert int(drawing.get_attribute("data-routes")) == len([r for r in solution["routes"] if r])


def test_a_broken_file_shows_the_services_message(browser: Any, console_url: str,
                                                   tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    broken = tmp_path / "broken.vrp"
    broken.write_text("NAME : broken\nTYPE : CVRP\nDIMENSION : 3\nCAPACITY : 10\n"
                      "EDGE_WEIGHT_TYPE : EUC_2D\nNODE_COORD_SECTION\n1 0 0\n2 x 1\nEOF\n")
    answer = httpx.post(f"{console_url}/v1/jobs", files={"file": ("broken.vrp",
                                                                  broken.read_bytes())},
                        data={"solver": "ortools", "time_limit": "1"})
    assert answer.status_code == 422
    problem = answer.json()
    open_view(browser, console_url, "solve")
    browser.find_element(By.ID, "solve-file").send_keys(str(broken))
    wait_for(lambda: browser.find_element(By.CSS_SELECTOR, "#solve-solvers input"),
             what="the solver list")
    choose(browser, "solve-solvers", ["ortools"])
    browser.find_element(By.ID, "solve-run").click()
    # shown beside the field the problem names (file, or file.coords and the like)
    field = problem["field"].split(".")[0].split("[")[0]
    message = wait_for(lambda: browser.find_element(By.ID, f"solve-{field}-problem").text,
                       what="the service's message")
    assert problem["detail"] in message
    shot(browser, "solve-refused")


def test_a_refused_option_is_shown_beside_its_field(browser: Any, console_url: str) -> None:
    from selenium.webdriver.common.by import By

    open_view(browser, console_url, "solve")
    browser.find_element(By.ID, "solve-file").send_keys(str(DATA / "eil51.tsp"))
    wait_for(lambda: browser.find_element(By.ID, "solve-solvers-ortools"), what="the solvers")
    choose(browser, "solve-solvers", ["ortools"])
    field = browser.find_element(By.ID, "solve-time")
    field.clear()
    field.send_keys("-1")
    browser.find_element(By.ID, "solve-run").click()
    message = wait_for(lambda: browser.find_element(By.ID, "solve-time_limit-problem").text,
                       what="the time limit's problem")
    assert message.startswith("422") and "time_limit" in message
    assert "invalid" in browser.find_element(By.CSS_SELECTOR, "[data-field=time_limit]") \
        .get_attribute("class")


def test_a_batch_gives_its_summary_with_gaps(browser: Any, console_url: str) -> None:
    from selenium.webdriver.common.by import By

    open_view(browser, console_url, "jobs")
    files = [DATA / "eil51.tsp", DATA / "eil51.opt.tour", DATA / "X-n101-k25.vrp",
             DATA / "X-n101-k25.sol"]
    browser.find_element(By.ID, "batch-files").send_keys("\n".join(str(f) for f in files))
    solver = browser.find_element(By.ID, "batch-solver")
    solver.clear()
    solver.send_keys("nearest_neighbor")
    limit = browser.find_element(By.ID, "batch-time")
    limit.clear()
    limit.send_keys("1")
    browser.find_element(By.CSS_SELECTOR, "#batch-form button[type=submit]").click()
    summary = wait_for(lambda: browser.find_element(
        By.CSS_SELECTOR, "#batch-summary[data-done=true]"), timeout=60, what="the batch")
    assert "2 solved" in summary.text and "over 2 known solutions" in summary.text
    results = summary.find_elements(By.CSS_SELECTOR, "tbody tr")
    assert len(results) == 2 and all("%" in r.text for r in results)
    shot(browser, "batch")


def test_scheduling_gives_its_table_and_gantt(browser: Any, console_url: str) -> None:
    from selenium.webdriver.common.by import By

    open_view(browser, console_url, "scheduling")
    choose(browser, "sched-policies", ["heft", "eft"])
    count = browser.find_element(By.ID, "sched-count")
    count.clear()
    count.send_keys("10")
    browser.find_element(By.CSS_SELECTOR, "#sched-form button[type=submit]").click()
    wait_for(lambda: len(rows(browser, "sched-table")) == 2, timeout=60, what="the table")
    text = browser.find_element(By.ID, "sched-table").text
    assert "heft" in text and "eft" in text and "checked" in text
    gantt = browser.find_element(By.ID, "sched-gantt")
    wait_for(lambda: int(gantt.get_attribute("data-tasks") or 0) > 0, what="the Gantt chart")
    shot(browser, "scheduling")


def test_flow_compares_the_solvers(browser: Any, console_url: str) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    open_view(browser, console_url, "flow")
    browser.find_element(By.ID, "flow-file").send_keys(str(DATA / "netgen_8_08a.min.gz"))
    choose(browser, "flow-solvers", ["ortools_mcf", "networkx_simplex"])
    Select(browser.find_element(By.ID, "flow-example"))  # the example list is there too
    browser.find_element(By.CSS_SELECTOR, "#flow-form button[type=submit]").click()
    wait_for(lambda: len(rows(browser, "flow-table")) == 2, timeout=60, what="the table")
    assert browser.find_element(By.ID, "flow-summary").get_attribute("data-agree") == "true"
    assert rows(browser, "flow-table")[0].text.count("optimal") == 1
    shot(browser, "min-cost-flow")


def test_the_jobs_view_lists_and_opens_jobs(browser: Any, console_url: str) -> None:
    from selenium.webdriver.common.by import By

    job = httpx.post(f"{console_url}/v1/jobs", files={"file": ("eil51.tsp", (
        DATA / "eil51.tsp").read_bytes())}, data={"solver": "nearest_neighbor"}).json()
    open_view(browser, console_url, "jobs")
    first = wait_for(lambda: rows(browser, "jobs-table")[0].get_attribute("data-job")
                     == job["id"] and rows(browser, "jobs-table")[0], what="the new job listed")
    first.find_element(By.TAG_NAME, "a").click()
    facts = wait_for(lambda: "succeeded" in browser.find_element(By.ID, "job-facts").text
                     and browser.find_element(By.ID, "job-facts").text, what="the job's facts")
    assert "eil51.tsp" in browser.find_element(By.ID, "job-detail-title").text
    assert "nearest_neighbor" in facts
    wait_for(lambda: browser.find_element(By.ID, "job-svg").is_displayed(),
             what="the service's drawing")
    shot(browser, "jobs")


def test_a_server_with_api_keys_asks_for_one(browser: Any) -> None:
    """With COSOLVE_API_KEYS the console asks for a key, sends it, and follows its jobs
    through their event streams read with fetch() (an EventSource cannot send a key; before,
    such jobs were polled)."""
    from selenium.webdriver.common.by import By

    key = "console-test-key-0123456789"
    with uvicorn_server({"COSOLVE_API_KEYS": key}) as url:
        browser.get(f"{url}/#solve")
        form = wait_for(lambda: browser.find_element(By.ID, "key-form").is_displayed()
                        and browser.find_element(By.ID, "key-form"), what="the key form")
        assert browser.find_element(By.ID, "key-problem").text
        browser.find_element(By.ID, "key").send_keys(key)
        form.find_element(By.TAG_NAME, "button").click()
        wait_for(lambda: browser.find_elements(By.CSS_SELECTOR, "#solve-solvers input"),
                 what="the solvers, with the key")
        browser.find_element(By.ID, "solve-file").send_keys(str(DATA / "eil51.tsp"))
        wait_for(lambda: browser.find_element(By.ID, "solve-solvers-nearest_neighbor"),
                 what="the TSP solvers")
        choose(browser, "solve-solvers", ["nearest_neighbor"])
        browser.find_element(By.ID, "solve-run").click()
        wait_for(lambda: rows(browser, "solve-table")[0].get_attribute("data-state")
                 == "succeeded", timeout=60, what="the job, streamed")
        fetched = browser.execute_script(
            "return performance.getEntriesByType('resource').map((e) => e.name)")
        assert any(re.search(r"/v1/jobs/\w+/events$", u) for u in fetched), fetched
        assert not any(re.search(r"/v1/jobs/\w+$", u) for u in fetched), fetched  # no polls
        drawing = browser.find_element(By.CSS_SELECTOR, "canvas.routes")
        wait_for(lambda: drawing.get_attribute("data-routes") == "1", what="the tour drawn")
        browser.execute_script("sessionStorage.clear()")
