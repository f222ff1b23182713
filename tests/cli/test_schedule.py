"""``cosolve schedule``: JSON output, folders of workflow files, Gantt charts, bad input."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from cli.main import app
from tests.app.helpers import assert_problem
from tests.solvers.scheduling.conftest import CLASSIC, WORKFLOWS

runner = CliRunner()


def _run(*args: str):  # type: ignore[no-untyped-def]
    return runner.invoke(app, ["schedule", *args])


def test_simulate_json_on_the_classic_files() -> None:
    result = _run("simulate", "--workflows", ",".join(str(p) for p in CLASSIC), "--pool",
                  "6x4", "--rate", "5.4,9", "--workflows-count", "300",
                  "--policies", "heft,eft,eft_stale,est", "--seed", "2", "--json")
    assert result.exit_code == 0, result.stderr
    out = json.loads(result.stdout)
    rows = {r["policy"]: r for r in out["rows"]}
    assert out["workflows_count"] == 300 and out["rates"] == [5.4, 9.0]
    # the API's shape: pool label, VM count and vCPUs side by side
    assert (out["pool"], out["vms"], out["seed"]) == ("6x4", 24, 2) and len(out["vcpus"]) == 24
    assert [w["name"] for w in out["workflows"]] == [
        "CyberShake_30", "Montage_25", "Inspiral_30", "Sipht_30"]
    # the ordering research note §4 found: correct EFT ≪ stale EFT ≪ EST
    assert rows["eft"]["mean_flowtime"] < 0.85 * rows["eft_stale"]["mean_flowtime"]
    assert rows["eft_stale"]["mean_flowtime"] < rows["est"]["mean_flowtime"]
    assert out["best_policy"] in ("heft", "eft")
    assert all(r["workflows"] == 300 for r in rows.values())
    again = json.loads(_run("simulate", "--workflows", ",".join(str(p) for p in CLASSIC),
                            "--rate", "5.4,9", "--workflows-count", "300", "--policies",
                            "heft", "--seed", "2", "--json").stdout)
    assert again["rows"][0]["mean_flowtime"] == rows["heft"]["mean_flowtime"]


def test_folder_generated_and_gantt(tmp_path: Path) -> None:
    folder = tmp_path / "wf"
    folder.mkdir()
    for p in CLASSIC[:2]:
        (folder / p.name).write_bytes(p.read_bytes())
    result = _run("simulate", "--workflows", str(folder), "--workflows-count", "20",
                  "--policies", "heft,round_robin", "--gantt", str(tmp_path), "--json",
                  "--schedule", str(tmp_path))
    assert result.exit_code == 0, result.stderr
    out = json.loads(result.stdout)
    assert len(out["workflows"]) == 2
    rows = {row["policy"]: row for row in out["rows"]}
    schedule = json.loads((tmp_path / "schedule_heft.json").read_text())
    assert rows["heft"]["schedule"] == str(tmp_path / "schedule_heft.json")
    flow = [w["flowtime"] for w in schedule["workflows"]]
    assert len(flow) == 20 and sum(flow) / 20 == pytest.approx(rows["heft"]["mean_flowtime"])
    finish = {w["workflow"]: w["finish"] for w in schedule["workflows"]}
    assert all(t["finish"] <= finish[t["workflow"]] + 1e-9 for t in schedule["tasks"])
    assert len(schedule["tasks"]) == rows["heft"]["decisions"]
    svg = (tmp_path / "gantt_heft.svg").read_text()
    assert svg.startswith("<svg") and "<rect" in svg
    # tooltips name tasks by id, as the schedule does (before: the internal index)
    first = {t["task"] for t in schedule["tasks"] if t["workflow"] == 0}
    assert all(f"<title>workflow 0 task {tid}: " in svg for tid in first)
    assert "task 0:" not in svg
    table = _run("simulate", "--shapes", "montage,sipht", "--tasks", "60",
                 "--workflows-count", "20", "--policies", "heft,random")
    assert table.exit_code == 0, table.stderr
    assert "heft" in table.stdout and "mean flowtime" in table.stdout


def test_bad_input_exits_2_naming_the_option(tmp_path: Path) -> None:
    cases = [
        (["--pool", "8x2"], "--pool"),
        (["--policies", "heft,zzz"], "--policies"),
        (["--policies", "heft,eft,heft"], "--policies"),
        (["--rate", "fast"], "--rate"),
        (["--rate", "-1"], "--rate"),
        (["--rate", "5.4,1e-320"], "--rate"),
        (["--pool", "8,1e308"], "--pool"),
        (["--workflows-count", "0"], "--workflows-count"),
        (["--workflows-count", "100000000000"], "--workflows-count"),
        (["--workflows", str(tmp_path / "none.xml")], "--workflows"),
        (["--shapes", "ligo"], "--shapes"),
    ]
    for args, option in cases:
        result = _run("simulate", *args)
        assert result.exit_code == 2, (args, result.stdout)
        assert result.stderr.startswith(f"error: {option}"), result.stderr
    cyclic = tmp_path / "loop.json"
    cyclic.write_text(json.dumps({"tasks": [{"id": "a", "runtime": 1, "parents": ["b"]},
                                            {"id": "b", "runtime": 1, "parents": ["a"]}]}))
    result = _run("simulate", "--workflows", str(cyclic))
    assert result.exit_code == 2 and "cycle" in result.stderr
    # a bad file in a folder is named
    folder = tmp_path / "wf"
    folder.mkdir()
    (folder / "good.json").write_text(json.dumps({"tasks": [{"id": "a", "runtime": 1}]}))
    (folder / "zz.json").write_text(json.dumps({"tasks": [{"id": "a", "runtime": -5}]}))
    result = _run("simulate", "--workflows", str(folder))
    assert result.exit_code == 2
    assert result.stderr.startswith(f"error: --workflows: {folder / 'zz.json'}: tasks[0].runtime")


def test_policies_listing() -> None:
    result = _run("policies", "--json")
    assert result.exit_code == 0
    names = {p["name"] for p in json.loads(result.stdout)}
    assert {"goodrl", "heft", "eft", "peft", "est", "eft_stale", "peft_stale"} <= names
    assert (WORKFLOWS / "HEFT_paper.xml").exists()


def test_rates_keep_their_order_and_repeats(tmp_path: Path) -> None:
    """5.4,9,5.4 ran as [5.4, 9] (repeats dropped like a list of names); an unwritable
    --gantt target is a clear error, not a traceback."""
    result = _run("simulate", "--workflows-count", "6", "--policies", "heft", "--rate",
                  "5.4,9,5.4", "--json")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["rates"] == [5.4, 9.0, 5.4]
    (tmp_path / "gantt_heft.svg").mkdir()  # the file to write is a folder
    blocked = _run("simulate", "--workflows-count", "3", "--policies", "heft",
                   "--gantt", str(tmp_path))
    assert blocked.exit_code == 2 and "--gantt: cannot write" in blocked.stderr
    a_file = tmp_path / "chart.svg"
    a_file.write_text("")
    named = _run("simulate", "--workflows-count", "3", "--policies", "heft",
                 "--gantt", str(a_file))
    # a file given for the folder is named as such, not "does not exist"
    assert named.exit_code == 2 and "is a file; give a folder" in named.stderr
    # a new folder in an existing one is made (before: it was refused), a deeper one not
    made = _run("simulate", "--workflows-count", "3", "--policies", "heft",
                "--schedule", str(tmp_path / "new"))
    assert made.exit_code == 0, made.stderr
    assert any((tmp_path / "new").iterdir())
    deep = _run("simulate", "--workflows-count", "3", "--policies", "heft",
                "--schedule", str(tmp_path / "a" / "b"))
    assert deep.exit_code == 2 and "does not exist" in deep.stderr


def test_a_chart_or_schedule_that_cannot_be_written_keeps_the_result(tmp_path: Path) -> None:
    """Regression: under --json an unwritable --gantt or --schedule file printed no document
    (only the error on stderr); it now prints the results with the error, as `solve --out`
    does, and without --json the table comes before the error."""
    for option, name in (("--gantt", "gantt_heft.svg"), ("--schedule", "schedule_heft.json")):
        folder = tmp_path / option.strip("-")
        (folder / name).mkdir(parents=True)  # the file to write is a folder
        args = ("simulate", "--workflows-count", "3", "--policies", "heft", option, str(folder))
        result = _run(*args, "--json")
        assert result.exit_code == 2, result.output
        doc = json.loads(result.stdout)
        assert doc["error"].startswith(f"{option}: cannot write {folder / name}")
        assert doc["best_policy"] == "heft" and doc["rows"][0]["mean_flowtime"] > 0
        table = _run(*args)
        assert table.exit_code == 2 and f"error: {option}: cannot write" in table.stderr
        assert "heft" in table.stdout and "mean flowtime" in table.stdout


def test_generated_shapes_give_the_apis_numbers_for_the_same_seed(api: httpx.Client) -> None:
    """Regression: --seed also seeded the generated templates' runtime noise, so the
    CLI and POST /v1/scheduling/simulate disagreed at any seed but 0. The templates now have
    their own --template-seed (the API's generator.seed), 0 by default in both."""
    cli = json.loads(_run("simulate", "--workflows-count", "30", "--policies", "heft",
                          "--seed", "7", "--json").stdout)
    served = api.post("/v1/scheduling/simulate", json={
        "workflows_count": 30, "policies": ["heft"], "seed": 7}).json()
    assert cli["rows"][0]["mean_flowtime"] == served["rows"][0]["mean_flowtime"]
    other = json.loads(_run("simulate", "--workflows-count", "30", "--policies", "heft",
                            "--seed", "7", "--template-seed", "3", "--json").stdout)
    assert other["rows"][0]["mean_flowtime"] != cli["rows"][0]["mean_flowtime"]


def test_generated_workflows_echo_their_seed(api: httpx.Client) -> None:
    """Regression: an answer on generated workflows named the stream's seed but not the
    generator's (their runtimes), so it could not be reproduced from the answer alone. Both
    now echo the generator's settings, and sending them back gives the same numbers."""
    cli = json.loads(_run("simulate", "--workflows-count", "20", "--policies", "heft",
                          "--seed", "7", "--template-seed", "3", "--json").stdout)
    generator = {"shapes": ["montage", "cybershake", "inspiral", "sipht"], "tasks": 30,
                 "seed": 3}
    assert cli["generator"] == generator
    served = api.post("/v1/scheduling/simulate", json={
        "workflows_count": 20, "policies": ["heft"], "seed": 7, "generator": {"seed": 3}}).json()
    assert served["generator"] == generator
    again = api.post("/v1/scheduling/simulate", json={
        "workflows_count": 20, "policies": ["heft"], "seed": served["seed"],
        "generator": served["generator"]}).json()
    assert (again["rows"][0]["mean_flowtime"] == served["rows"][0]["mean_flowtime"]
            == cli["rows"][0]["mean_flowtime"])
    default = api.post("/v1/scheduling/simulate", json={"workflows_count": 5,
                                                         "policies": ["heft"]}).json()
    assert default["generator"] == {**generator, "seed": 0}
    given = json.loads(_run("simulate", "--workflows", str(CLASSIC[0]), "--workflows-count",
                            "5", "--policies", "heft", "--json").stdout)
    assert given["generator"] is None


def test_a_sessions_state_names_its_seed(api: httpx.Client) -> None:
    """Regression: a session's seed decides the random policy's choices and ties, yet its state
    (HTTP and CLI) did not say which seed it ran under."""
    r = api.post("/v1/scheduling/sessions", json={"pool": "1x2", "policy": "random", "seed": 5})
    assert r.status_code == 201 and r.json()["seed"] == 5
    assert api.get(r.headers["location"]).json()["seed"] == 5
    api.delete(r.headers["location"])
    result = runner.invoke(app, ["schedule", "session", "--pool", "1x2", "--policy", "random",
                                 "--seed", "5"], input='{"type": "state"}\n')
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["seed"] == 5


def test_session_on_stdin_answers_as_the_http_session(api: httpx.Client,
                                                      tmp_path: Path) -> None:
    """``cosolve schedule session`` is the sessions' CLI twin: the same events give the same
    assignments line by line as over HTTP, a refused line answers its problem (with what the
    events before it answered) and the later lines still run; exit code 2 then."""
    montage = (WORKFLOWS / "Montage_25.xml").read_text()
    requests: list[dict[str, object]] = [
        {"events": [{"type": "workflow_arrived", "time": 0, "workflow_id": "m",
                     "document": montage},
                    {"type": "workflow_arrived", "time": 0, "shape": "sipht", "seed": 3}]},
        {"events": [{"type": "task_finished", "time": 2.5, "workflow_id": "m",
                     "task_id": "ID00001"},
                    {"type": "task_finished", "time": 2.5, "workflow_id": "m",
                     "task_id": "ID00003"},
                    {"type": "task_finished", "time": 2.0, "workflow_id": "m",
                     "task_id": "ID00004"}]},  # refused: before the session's time
        {"events": [{"type": "task_finished", "time": 3, "workflow_id": "m",
                     "task_id": "ID00004"}]},
    ]
    r = api.post("/v1/scheduling/sessions", json={"pool": "5x5", "policy": "heft_slack"})
    url = r.headers["location"]
    over_http = [api.post(f"{url}/events", json=body).json() for body in requests]
    # a local file may stand for the document, and a single event is a line too
    first = json.loads(json.dumps(requests[0]))
    del first["events"][0]["document"]
    first["events"][0]["file"] = str(WORKFLOWS / "Montage_25.xml")
    lines = [json.dumps(first), json.dumps(requests[1]),
             json.dumps(requests[2]["events"][0]), '{"type": "state"}']  # type: ignore[index]
    result = runner.invoke(app, ["schedule", "session", "--pool", "5x5", "--policy",
                                 "heft_slack"], input="\n".join(lines) + "\n")
    assert result.exit_code == 2, result.stderr
    answers = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(answers) == 4
    assert answers[0] == over_http[0] and len(answers[0]["assignments"]) > 2
    problem = over_http[1]
    assert answers[1]["error"]["field"] == problem["field"] == "events[2].time"
    assert answers[1]["error"]["applied"] == problem["applied"] == 2
    assert answers[1]["error"]["assignments"] == problem["assignments"]
    assert answers[2] == over_http[2]
    assert answers[3]["now"] == 3.0 and answers[3]["policy"] == "heft_slack"
    # bad lines: not JSON, an unknown event type, an unreadable file; and what ended the
    # whole session before: a corrupt .gz, nesting too deep, 5,000 digits
    corrupt = bytearray(gzip.compress((WORKFLOWS / "Montage_25.xml").read_bytes()))
    corrupt[20:60] = b"\xff" * 40
    broken = tmp_path / "corrupt.xml.gz"
    broken.write_bytes(bytes(corrupt))
    bad = ["{", '{"type": "task_done", "time": 1}',
           '{"type": "workflow_arrived", "time": 0, "file": "/no/such.xml"}',
           json.dumps({"type": "workflow_arrived", "time": 0, "file": str(broken)}),
           "[" * 100_000 + "]" * 100_000,
           '{"type": "workflow_arrived", "time": 0, "shape": "montage", "seed": ' + "9" * 5000
           + "}",
           '{"type": "task_finished", "time": 0, "workflow_id": "w", "task_id": "t", '
           '"file": "x.xml"}',
           json.dumps({"type": "workflow_arrived", "time": 0, "shape": "sipht",
                       "file": str(WORKFLOWS / "Montage_25.xml")}),
           json.dumps({"type": "workflow_arrived", "time": 0,
                       "file": str(WORKFLOWS / "Sipht_30.xml.gz")})]
    result = runner.invoke(app, ["schedule", "session", "--pool", " 5x5 "],
                           input="\n".join(bad) + "\n{\"type\": \"state\"}\n")
    assert result.exit_code == 2
    answers = [json.loads(line) for line in result.stdout.splitlines()]
    assert [a.get("error", {}).get("field") for a in answers] == [
        "line", "events[0].type", "events[0].file", "events[0].file", "line", "line",
        "events[0].file", "events[0].shape", None, None]
    assert "gzip" in answers[3]["error"]["detail"]
    assert len(answers[8]["assignments"]) > 0 and answers[9]["pool"] == "5x5"


def test_a_local_file_takes_no_tasks_and_fails_in_its_turn() -> None:
    """Regression: tasks, seed and format beside a local file were ignored (as beside a
    document over HTTP), and an unreadable file later in a batch applied none of the events
    before it; now it is refused in its turn, after them, as HTTP refuses a bad document."""
    montage = str(WORKFLOWS / "Montage_25.xml")
    lines = [json.dumps({"type": "workflow_arrived", "time": 0, "file": montage, key: value})
             for key, value in (("tasks", 12), ("seed", 5), ("format", "dax"))]
    lines.append(json.dumps({"events": [
        {"type": "workflow_arrived", "time": 1, "workflow_id": "a", "shape": "montage"},
        {"type": "workflow_arrived", "time": 2, "workflow_id": "b", "file": "/no/such.xml"}]}))
    result = runner.invoke(app, ["schedule", "session"], input="\n".join(lines) + "\n")
    assert result.exit_code == 2
    answers = [json.loads(line)["error"] for line in result.stdout.splitlines()]
    assert [a["field"] for a in answers] == ["events[0].tasks", "events[0].seed",
                                            "events[0].format", "events[1].file"]
    assert answers[3]["applied"] == 1 and answers[3]["workflow_ids"] == ["a"]
    assert answers[3]["assignments"]


def test_bad_input_under_json_prints_a_document() -> None:
    """Under --json a refused option also prints a JSON document with the error, as the
    routing commands do."""
    result = _run("simulate", "--rate", "abc", "--json")
    assert result.exit_code == 2
    printed = json.loads(result.stdout)
    assert printed["rows"] == [] and "--rate" in printed["error"]


def test_more_rates_than_workflows_is_refused_naming_the_option() -> None:
    """The twin of the API's 422 on `rates` (before: five rates over two workflows ran
    rates 1 and 3 only)."""
    result = _run("simulate", "--workflows-count", "2", "--policies", "heft", "--rate",
                  "1,2,3,4,5", "--json")
    assert result.exit_code == 2
    assert "--rate: 5 rates for 2 workflows" in result.stderr
    assert "5 rates for 2 workflows" in json.loads(result.stdout)["error"]


def test_an_unknown_key_beside_events_is_refused_as_over_http(api: httpx.Client) -> None:
    """Regression: the CLI session dropped unknown keys of the {"events": [...]} wrapper and
    applied the events, while POST .../events refuses extra fields with a 422."""
    line = {"events": [{"type": "workflow_arrived", "time": 0, "workflow_id": "w",
                        "shape": "montage"}], "typo": 1}
    url = api.post("/v1/scheduling/sessions", json={}).headers["location"]
    problem = assert_problem(api.post(f"{url}/events", json=line), 422, "typo")
    result = runner.invoke(app, ["schedule", "session"],
                           input=json.dumps(line) + '\n{"type": "state"}\n')
    assert result.exit_code == 2
    answer, state = (json.loads(out) for out in result.stdout.splitlines())
    assert answer["error"]["field"] == problem["field"] == "typo"
    assert answer["error"]["detail"] == problem["detail"]
    assert state["workflows"] == [] and state["events"] == 0  # nothing was applied


def test_tasks_help_gives_the_cli_range_and_the_apis() -> None:
    """Regression: --tasks takes 10 to 5,000 while the API's generator.tasks takes 10 to 2,000,
    and --help said neither."""
    result = _run("simulate", "--help")
    text = " ".join(result.stdout.split())
    assert "10 to 5,000 (the API's generator.tasks allows 10 to 2,000)" in text


def test_a_line_that_is_not_utf8_is_one_refused_line(tmp_path: Path) -> None:
    """Regression: an --events file with bytes that are not UTF-8 ended the session with a
    UnicodeDecodeError traceback; now that line is answered with an error and the next
    lines still run (as on stdin), exit 2."""
    events = tmp_path / "events.jsonl"
    events.write_bytes(b'{"type": "state"}\n\xff\xfe garbage\n{"type": "state"}\n')
    result = runner.invoke(app, ["schedule", "session", "--events", str(events)])
    assert result.exit_code == 2, result.output
    answers = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(answers) == 3 and "error" not in answers[0] and "error" not in answers[2]
    assert answers[1]["error"]["field"] == "line" and "not UTF-8" in answers[1]["error"]["detail"]
    assert "Traceback" not in result.output


def test_no_policy_could_run_is_in_the_json_document(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every policy unavailable (goodrl without its weights): exit 1, and under --json the
    document carries the reason in "error", as every other --json failure does."""
    import solvers.scheduling.goodrl as goodrl

    monkeypatch.setattr(goodrl, "availability", lambda path=None: "weights/goodrl.pt is missing")
    result = _run("simulate", "--workflows-count", "3", "--policies", "goodrl", "--json")
    assert result.exit_code == 1
    document = json.loads(result.stdout)
    assert document["best_policy"] is None and document["error"] == "no policy could run"
    assert "missing" in document["rows"][0]["error"]


def _bad_folder(tmp_path: Path) -> Path:
    """One good DAX, one WfCommons JSON with a negative runtime (as a real Pegasus file has)."""
    folder = tmp_path / "mixed"
    folder.mkdir()
    (folder / CLASSIC[1].name).write_bytes(CLASSIC[1].read_bytes())
    (folder / "negative.json").write_text(json.dumps(
        {"tasks": [{"id": "a", "runtime": 2}, {"id": "b", "runtime": -3, "parents": ["a"]}]}))
    return folder


def test_skip_bad_files_runs_the_rest_and_lists_each(tmp_path: Path) -> None:
    folder = _bad_folder(tmp_path)
    result = _run("simulate", "--workflows", str(folder), "--workflows-count", "20",
                  "--policies", "heft", "--skip-bad-files", "--json")
    assert result.exit_code == 0, result.stderr
    out = json.loads(result.stdout)
    assert [w["name"] for w in out["workflows"]] == ["Montage_25"]
    assert out["skipped"] == [{"file": str(folder / "negative.json"),
                               "reason": out["skipped"][0]["reason"]}]
    assert out["skipped"][0]["reason"].startswith("tasks[1].runtime")
    assert f"skipped {folder / 'negative.json'}: tasks[1].runtime" in result.stderr
    # without the flag the bad file stops the run, named
    result = _run("simulate", "--workflows", str(folder), "--policies", "heft")
    assert result.exit_code == 2
    assert result.stderr.startswith(f"error: --workflows: {folder / 'negative.json'}: tasks[1]")
    # a folder of bad files only has nothing to simulate
    (folder / CLASSIC[1].name).unlink()
    result = _run("simulate", "--workflows", str(folder), "--skip-bad-files")
    assert result.exit_code == 2 and "every workflow file was skipped" in result.stderr


def test_an_overloaded_pool_is_warned_about_under_the_table() -> None:
    # the classic shapes at the full capacity of a 3x2 pool: the queue never drains
    result = _run("simulate", "--pool", "3x2", "--rate", "7.7", "--workflows-count", "45",
                  "--policies", "heft")
    assert result.exit_code == 0, result.stderr
    assert "warning: utilization above 0.9 (heft 0.9" in result.stderr
    light = _run("simulate", "--pool", "6x4", "--rate", "5", "--workflows-count", "45",
                 "--policies", "heft", "--json")
    assert json.loads(light.stdout)["warnings"] == [] and "warning" not in light.stderr
