// Solve and compare: one file, several solvers, each solver a job of the public API. The
// chart follows every job's server-sent events; while a job runs and its best cost falls,
// its best plan so far (/incumbent, for the solvers that publish one) is redrawn, at most
// every INCUMBENT_MS; the final plan (or the best kept after a cancel) replaces it.

import { api, follow, links } from "./api.js";
import { CostChart } from "./chart.js";
import { RouteView } from "./routes.js";
import {
  $, checkboxList, checked, clearProblems, el, fmt, pct, saveBlob, SERIES_COLOURS, showProblem,
} from "./ui.js";

const REFERENCE = /\.(sol|tour)(\.gz)?$/i;
// How often one job's best plan so far may be fetched while it runs.
const INCUMBENT_MS = 2000;
const DEFAULT_SOLVERS = ["ortools", "pyvrp", "ils"];

const state = { file: null, reference: null, info: null, solvers: [], runs: new Map() };
let chart;
const worker = new Worker("/console/js/parse-worker.js");

// -- the file ---------------------------------------------------------------------------
function readInstance(file) {
  return new Promise((resolve) => {
    worker.onmessage = (e) => resolve(e.data.ok ? e.data.info : null);
    worker.postMessage({ file });
  });
}

async function setFile(file, reference) {
  clearProblems("solve");
  state.file = file;
  if (reference !== undefined) state.reference = reference;
  $("solve-drop").querySelector("span").textContent =
    `${file.name} (${fmt(file.size)} bytes)` + (state.reference ? ` with ${state.reference.name}` : "");
  const mark = performance.now();
  state.info = await readInstance(file);
  // how long the worker took to read the coordinates (benchmarks/console.py reports it)
  $("solve-drop").dataset.readMs = (performance.now() - mark).toFixed(0);
  showDetected(state.info, null);
  await loadSolvers(state.info ? state.info.kind : null);
}

function showDetected(info, service) {
  const box = $("solve-detected");
  box.replaceChildren();
  if (!info && !service) {
    box.append(el("p", { text: "The console could not read this file for drawing; the service will say what it makes of it when you solve." }));
    return;
  }
  const facts = service || info;
  const row = (k, v) => [el("dt", { text: k }), el("dd", { text: v ?? "–" })];
  const dl = el("dl", { class: "facts", dataset: { kind: facts.kind || "", nodes: facts.nodes ?? "" } },
    row("problem", (facts.kind || "?").toUpperCase()), row("nodes", fmt(facts.nodes)),
    row("vehicles", facts.kind === "tsp" ? "–" : facts.vehicles ? fmt(facts.vehicles) : "unlimited"),
    row("capacity", facts.capacity !== null ? fmt(facts.capacity) : "–"),
    row("distance", facts.distance || "–"),
    service && service.reference ? row("known solution", `${fmt(service.reference)} (${service.referenceFile})`) : null);
  box.append(el("p", { class: "note", text: service ? "As the service read it:" : "Read from the file (the service confirms it when you solve):" }), dl);
}

async function loadSolvers(kind) {
  const box = $("solve-solvers");
  try {
    const list = (await api.solvers(kind || undefined)).solvers.filter((s) => s.family === "routing");
    const n = state.info?.nodes || 0;
    for (const s of list) {
      const cap = kind ? s.max_nodes[kind] : undefined;
      if (s.available && cap !== undefined && n > cap) {
        s.available = false;
        s.unavailable_reason = `solves at most ${fmt(cap)} nodes of a ${kind.toUpperCase()}`;
      }
    }
    state.solvers = list;
    const usable = list.filter((s) => s.available).map((s) => s.name);
    const picks = DEFAULT_SOLVERS.filter((name) => usable.includes(name)).slice(0, 2);
    checkboxList(box, list, { name: "solver", checked: (s) => picks.includes(s.name) });
  } catch (err) {
    showProblem("solve", err, "solver");
  }
}

// -- a run: one solver's job ------------------------------------------------------------------
function runCard(run) {
  const canvas = el("canvas", { class: "routes", role: "img", "aria-label": `Routes of ${run.solver}`,
    dataset: { solver: run.solver, routes: "0", redraws: "0" } });
  run.redraws = 0; // best plans so far drawn while the job ran (data-redraws)
  run.drawnCost = Infinity;
  run.lastFetch = -Infinity;
  run.view = new RouteView(canvas);
  if (state.info) run.view.setInstance(state.info);
  run.caption = el("span", { class: "caption", text: "queued" });
  run.downloads = el("div", { class: "downloads" });
  run.card = el("figure", { class: "drawing", dataset: { solver: run.solver } },
    el("figcaption", {}, el("strong", { text: run.solver }), " ", run.caption), canvas, run.downloads);
  $("solve-drawings").append(run.card);
  run.row = el("tr", { dataset: { solver: run.solver } });
  $("solve-table").tBodies[0].append(run.row);
  renderRow(run);
}

function renderRow(run) {
  const st = run.status;
  const p = st?.progress || {};
  const cost = st?.cost ?? p.best_cost ?? null;
  let gap = st?.gap_percent ?? null;
  if (gap === null && st?.reference && cost !== null && st.partial) gap = 100 * (cost / st.reference - 1);
  const sol = run.solution;
  const feasible = sol ? (sol.feasible ? "yes" : `no: ${sol.violations.join("; ")}`) : st?.feasible === false ? "no" : "–";
  const stateText = run.error ? "refused" : st ? st.state + (st.partial ? " (best kept)" : "") : "submitting";
  const cancel = el("button", { type: "button", disabled: !st || ["succeeded", "failed", "cancelled"].includes(st.state),
    onclick: () => cancelRun(run), "aria-label": `Cancel ${run.solver}` }, "Cancel");
  run.row.dataset.state = run.error ? "refused" : st ? st.state : "submitting";
  if (st) run.row.dataset.job = st.id;
  run.row.dataset.gap = gap === null ? "" : gap.toFixed(4);
  run.row.replaceChildren(
    el("td", { text: run.solver }), el("td", { text: stateText, title: run.error || st?.error || "" }),
    el("td", { class: "num", text: fmt(cost) }), el("td", { class: "num", text: pct(gap) }),
    el("td", { class: "num", text: fmt(sol ? sol.wall_time : p.elapsed, 3) }),
    el("td", { text: feasible }), el("td", { class: "num", text: fmt(p.iterations) }),
    el("td", { class: "num", text: sol ? String(sol.routes.filter((r) => r.length).length) : "–" }),
    el("td", {}, cancel));
  if (run.error) run.row.append(el("td", { class: "problem", text: run.error }));
  run.caption.textContent = run.error ? `refused: ${run.error}`
    : st ? `${stateText}, best ${fmt(cost)}` + (st.state !== "running" ? ""
      : run.redraws ? ` (best plan so far drawn: ${fmt(run.drawnCost)})` : " (the plan is drawn as it improves, or when the job ends)") : "submitting";
}

async function startRun(run, options) {
  try {
    run.status = await api.submitJob({ file: state.file, solver: run.solver, ...options,
      reference_file: state.reference });
  } catch (err) {
    run.error = err.message;
    renderRow(run);
    run.card.remove(); // nothing to draw: the refusal is in the table and beside its field
    showProblem("solve", err, "solver");
    allDone();
    return;
  }
  const s = run.status;
  showDetected(state.info, { kind: s.problem, nodes: s.nodes, vehicles: s.max_vehicles,
    capacity: state.info?.capacity ?? null, distance: state.info?.distance, reference: s.reference,
    referenceFile: s.reference_file });
  renderRow(run);
  run.stop = follow(s.id, {
    onProgress: (st) => { run.status = st; progressPoint(run); renderRow(run); },
    onEnd: (st) => { if (st.id) run.status = st; finish(run); },
    onError: (message) => { run.error = message; renderRow(run); },
  });
}

function progressPoint(run) {
  const p = run.status.progress;
  if (p && p.best_cost !== null && p.elapsed !== null) chart.add(run.solver, run.colour, p.elapsed, p.best_cost);
  if (p && p.best_cost !== null && p.best_cost < run.drawnCost && run.status.state === "running") redrawBest(run);
}

// The running job's best plan so far, drawn when its cost is below the one drawn; a plan
// the worker has not stored yet (404) or a job that just ended (409) is left to the next
// progress event or to the final plan.
async function redrawBest(run) {
  const now = performance.now();
  if (run.fetching || run.solution || now - run.lastFetch < INCUMBENT_MS) return;
  run.fetching = true;
  run.lastFetch = now;
  try {
    const plan = await api.incumbent(run.status.id);
    if (run.solution || plan.cost === null || !plan.feasible || plan.cost >= run.drawnCost) return;
    run.drawnCost = plan.cost;
    run.view.setRoutes(plan.routes, false);
    run.redraws += 1;
    run.view.canvas.dataset.redraws = String(run.redraws);
    renderRow(run);
  } catch (_) { /* none yet, or final: the final plan is drawn at the end */ } finally {
    run.fetching = false;
  }
}

function allDone() {
  const runs = [...state.runs.values()];
  const done = runs.every((r) => r.error || ["succeeded", "failed", "cancelled"].includes(r.status?.state));
  if (!done) return;
  $("solve-cancel").disabled = true;
  const ok = runs.filter((r) => r.status?.state === "succeeded").length;
  $("solve-status").textContent = `done: ${ok} of ${runs.length} succeeded`;
}

async function finish(run) {
  // when the service said the job ended, and when its plan arrived (benchmarks/console.py)
  const marks = window.__consoleMarks || {};
  marks[`${run.solver}:ended`] = performance.now();
  progressPoint(run);
  renderRow(run);
  allDone();
  const id = run.status.id;
  try {
    const series = await api.progress(id);
    if (series.points.length) chart.set(run.solver, run.colour, series.points);
  } catch (_) { /* the live points stay */ }
  if (run.status.cost === null && !run.status.partial) return;
  try {
    run.solution = await api.solution(id);
  } catch (err) {
    run.error = err.message;
    renderRow(run);
    return;
  }
  marks[`${run.solver}:fetched`] = performance.now();
  run.view.setRoutes(run.solution.routes);
  const sol = run.solution;
  const capacity = sol.route_details?.find((d) => d.capacity !== null)?.capacity ?? state.info?.capacity ?? null;
  const st = run.status;
  showDetected(state.info, { kind: st.problem, nodes: st.nodes, vehicles: st.max_vehicles, capacity,
    distance: sol.distance, reference: st.reference, referenceFile: st.reference_file });
  renderRow(run);
  downloads(run);
}

function downloads(run) {
  const id = run.status.id;
  const stem = (run.status.filename || "solution").replace(/(\.gz)?$/i, "").replace(/\.[^.]+$/, "");
  const plain = run.status.problem === "tsp" ? "tour" : "sol";
  const items = [];
  if (run.solution.feasible) items.push(el("a", { href: links.solution(id, plain), download: `${stem}-${run.solver}.${plain}` }, `.${plain}`));
  items.push(el("a", { href: links.solution(id, "json"), download: `${stem}-${run.solver}.json` }, "JSON"));
  items.push(el("a", { href: links.solution(id, "svg"), download: `${stem}-${run.solver}.svg` }, "SVG"));
  items.push(el("button", { type: "button", onclick: () => run.view.png(`${stem}-${run.solver}.png`, saveBlob) }, "PNG"));
  run.downloads.replaceChildren(el("span", { text: "Download:" }), ...items);
}

async function cancelRun(run) {
  if (!run.status) return;
  try {
    run.status = await api.cancelJob(run.status.id);
    renderRow(run);
  } catch (err) {
    showProblem("solve", err);
  }
}

// -- the form ------------------------------------------------------------------------------
async function submit(event) {
  event.preventDefault();
  clearProblems("solve");
  if (!state.file) {
    showProblem("solve", { message: "choose an instance file, drop one, or pick an example" }, "file");
    $("solve-file").focus();
    return;
  }
  const solvers = checked($("solve-solvers"));
  if (!solvers.length) {
    showProblem("solve", { message: "choose at least one solver" }, "solver");
    return;
  }
  for (const run of state.runs.values()) if (run.stop) run.stop();
  state.runs.clear();
  $("solve-drawings").replaceChildren();
  $("solve-table").tBodies[0].replaceChildren();
  const options = { time_limit: $("solve-time").value, seed: $("solve-seed").value,
    max_vehicles: $("solve-fleet").value };
  chart.clear(Number(options.time_limit) || 1);
  $("solve-cancel").disabled = false;
  $("solve-status").textContent = `running ${solvers.length} solver${solvers.length > 1 ? "s" : ""}…`;
  window.__consoleMarks = { submitted: performance.now() };
  const runs = solvers.map((solver, i) => ({ solver, colour: SERIES_COLOURS[i % SERIES_COLOURS.length] }));
  runs.forEach((run) => { state.runs.set(run.solver, run); runCard(run); });
  await Promise.all(runs.map((run) => startRun(run, options)));
}

function onFiles(files) {
  const list = [...files];
  const instance = list.find((f) => !REFERENCE.test(f.name));
  const reference = list.find((f) => REFERENCE.test(f.name));
  if (reference) state.reference = reference;
  if (instance) setFile(instance);
  else if (reference && state.file) setFile(state.file);
}

async function pickExample(value) {
  if (!value) return;
  const [name, ref] = value.split("|");
  const get = async (n) => new File([await (await fetch(`/console/examples/${n}`)).blob()], n);
  const instance = await get(name);
  await setFile(instance, ref ? await get(ref) : null);
}

export function initSolve() {
  chart = new CostChart($("solve-chart"));
  $("solve-form").addEventListener("submit", submit);
  $("solve-file").addEventListener("change", (e) => { if (e.target.files.length) onFiles(e.target.files); });
  $("solve-ref").addEventListener("change", (e) => { state.reference = e.target.files[0] || null; if (state.file) setFile(state.file); });
  $("solve-example").addEventListener("change", (e) => pickExample(e.target.value));
  const drop = $("solve-drop");
  drop.addEventListener("dragover", (e) => { e.preventDefault(); drop.classList.add("over"); });
  drop.addEventListener("dragleave", () => drop.classList.remove("over"));
  drop.addEventListener("drop", (e) => { e.preventDefault(); drop.classList.remove("over"); onFiles(e.dataTransfer.files); });
  $("solve-cancel").addEventListener("click", () => {
    for (const run of state.runs.values()) cancelRun(run);
  });
  loadSolvers(null);
}
