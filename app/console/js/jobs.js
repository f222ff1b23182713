// Jobs and batches: the job list (state, progress, filter), one job's live view (its chart
// from the event stream, the service's own SVG drawing once it is final), and batches of
// files with their summary, gaps and the results zip.

import { api, fetchBlob, follow, hasKey, links } from "./api.js";
import { CostChart } from "./chart.js";
import { $, clearProblems, el, fmt, pct, showProblem } from "./ui.js";

const FINAL = ["succeeded", "failed", "cancelled"];
let chart;
let stopDetail = null;
let listTimer = null;
let batchTimer = null;

function progressText(job) {
  const p = job.progress;
  if (job.state === "queued") return "queued";
  const share = job.time_limit ? Math.min(100, (100 * (p.elapsed || 0)) / job.time_limit) : null;
  return `${fmt(p.elapsed, 3)} s` + (share !== null && !FINAL.includes(job.state) ? ` (${share.toFixed(0)}%)` : "");
}

export async function showJobs() {
  clearProblems("jobs");
  const query = { limit: 100 };
  const stateFilter = $("jobs-state").value;
  if (stateFilter) query.state = stateFilter;
  let list;
  try {
    list = await api.jobs(query);
  } catch (err) {
    showProblem("jobs", err, "state");
    return;
  }
  const text = $("jobs-text").value.trim().toLowerCase();
  const jobs = list.jobs.filter((j) => !text || `${j.filename} ${j.solver} ${j.problem}`.toLowerCase().includes(text));
  const body = $("jobs-table").tBodies[0];
  body.replaceChildren(...jobs.map((j) => el("tr", { dataset: { job: j.id, state: j.state } },
    el("td", { text: j.filename }), el("td", { text: j.problem }), el("td", { text: j.solver }),
    el("td", { text: j.state + (j.partial ? " (best kept)" : "") }), el("td", { text: progressText(j) }),
    el("td", { class: "num", text: fmt(j.cost ?? j.progress.best_cost) }), el("td", { class: "num", text: pct(j.gap_percent) }),
    el("td", { text: j.created.slice(0, 19).replace("T", " ") }),
    el("td", {}, el("a", { href: `#jobs/${encodeURIComponent(j.id)}` }, "open")))));
  if (!jobs.length) body.append(el("tr", {}, el("td", { colspan: 9, text: "No jobs." })));
  clearTimeout(listTimer);
  if (!$("view-jobs").hidden && jobs.some((j) => !FINAL.includes(j.state))) listTimer = setTimeout(showJobs, 2000);
}

function facts(job) {
  const row = (k, v) => [el("dt", { text: k }), el("dd", { text: v ?? "–" })];
  $("job-facts").replaceChildren(
    ...row("state", job.state + (job.partial ? " (best kept)" : "")), ...row("problem", job.problem),
    ...row("nodes", fmt(job.nodes)), ...row("solver", job.solver), ...row("time limit", `${fmt(job.time_limit)} s`),
    ...row("elapsed", `${fmt(job.progress.elapsed, 3)} s`), ...row("iterations", fmt(job.progress.iterations)),
    ...row("cost", fmt(job.cost ?? job.progress.best_cost)), ...row("gap to known", pct(job.gap_percent)),
    ...(job.error ? row("error", job.error) : []));
}

function detailActions(job) {
  const box = $("job-actions");
  box.replaceChildren();
  if (!FINAL.includes(job.state)) {
    box.append(el("button", { type: "button", onclick: async () => {
      try { facts(await api.cancelJob(job.id)); } catch (err) { box.append(el("p", { class: "problem", text: err.message })); }
    } }, "Cancel (keeps the best)"));
    return;
  }
  if (job.cost === null && !job.partial) return;
  const plain = job.problem === "tsp" ? "tour" : "sol";
  const items = job.problem === "scheduling" ? [["json", "JSON"]] : [[plain, `.${plain}`], ["json", "JSON"], ["svg", "SVG"]];
  box.append(el("span", { text: "Download:" }),
    ...items.map(([f, label]) => el("a", { href: links.solution(job.id, f), download: `${job.id}.${f}` }, label)),
    el("a", { href: links.progressSvg(job.id), download: `${job.id}-progress.svg` }, "progress SVG"));
}

export async function openJob(id) {
  if (stopDetail) stopDetail();
  const panel = $("job-detail");
  panel.hidden = false;
  chart.clear(1);
  const img = $("job-svg");
  img.removeAttribute("src");
  img.hidden = true;
  img.onload = () => { img.hidden = false; };
  let job;
  try {
    job = await api.job(id);
  } catch (err) {
    $("job-detail-title").textContent = `Job ${id}`;
    $("job-facts").replaceChildren(el("p", { class: "problem", text: err.message }));
    return;
  }
  $("job-detail-title").textContent = `Job ${job.id}: ${job.filename}`;
  // a simulation has no plan to draw; its answer is the Scheduling view's table
  panel.querySelector(".job-detail").hidden = job.problem === "scheduling";
  chart.xMax = job.time_limit;
  const done = async (st) => {
    facts(st);
    detailActions(st);
    try { chart.set(st.solver, "#1f6feb", (await api.progress(st.id)).points); } catch (_) { /* keep */ }
    if (st.problem !== "scheduling" && (st.cost !== null || st.partial)) {
      const svg = links.solution(st.id, "svg");
      $("job-svg").src = hasKey() ? URL.createObjectURL(await fetchBlob(svg)) : svg;
    }
    showJobs();
  };
  facts(job);
  detailActions(job);
  try { chart.set(job.solver, "#1f6feb", (await api.progress(job.id)).points); } catch (_) { /* none yet */ }
  if (FINAL.includes(job.state)) { done(job); return; }
  stopDetail = follow(job.id, {
    onProgress: (st) => {
      facts(st);
      detailActions(st);
      if (st.progress.best_cost !== null) chart.add(st.solver, "#1f6feb", st.progress.elapsed, st.progress.best_cost);
    },
    onEnd: (st) => done(st.id ? st : job),
  });
  panel.scrollIntoView({ block: "nearest" });
}

// -- batches ----------------------------------------------------------------------------
// A TSP's length and a CVRP's cost never add up: one total per problem kind when mixed.
function totals(s) {
  const kinds = Object.entries(s.by_problem || {}).filter(([, k]) => k.solved);
  if (s.total_cost !== null || kinds.length < 2) return `total cost ${fmt(s.total_cost)}`;
  return "total cost per problem: " + kinds.map(([p, k]) => `${p} ${fmt(k.total_cost)}`).join(", ");
}

function batchTable(b) {
  const s = b.summary;
  const rows = b.results.map((r) => el("tr", { dataset: { job: r.job_id, state: r.state } },
    el("td", { text: r.filename }), el("td", { class: "num", text: fmt(r.nodes) }), el("td", { text: r.state + (r.partial ? " (partial)" : "") }),
    el("td", { class: "num", text: fmt(r.cost) }), el("td", { class: "num", text: pct(r.gap_percent) }),
    el("td", { class: "num", text: fmt(r.wall_time, 3) }), el("td", { class: "problem", text: r.error || "" }),
    el("td", {}, el("a", { href: `#jobs/${encodeURIComponent(r.job_id)}` }, "open"))));
  for (const r of b.rejected) {
    rows.push(el("tr", { dataset: { state: "rejected" } }, el("td", { text: r.filename }), el("td", { text: "–" }),
      el("td", { text: "rejected" }), el("td", { text: "–" }), el("td", { text: "–" }), el("td", { text: "–" }),
      el("td", { class: "problem", text: r.error }), el("td")));
  }
  const head = el("thead", {}, el("tr", {}, ...["file", "nodes", "state", "cost", "gap to known", "time (s)", "error", ""]
    .map((h) => el("th", { text: h }))));
  return el("div", { id: "batch-summary", dataset: { done: String(b.done) } },
    el("p", {}, `Batch ${b.id}: ${s.files} files, ${s.solved} solved, ${s.running} running, ${s.queued} queued, `
      + `${s.failed} failed, ${s.rejected} rejected; ${totals(s)}; `
      + (s.with_reference ? `mean gap ${pct(s.mean_gap_percent)} over ${s.with_reference} known solutions.` : "no known solutions.")),
    el("div", { class: "actions" }, el("a", { href: links.batchZip(b.id), download: `batch-${b.id}.zip` }, "Download results.zip"),
      el("a", { href: links.batchMarkdown(b.id), download: `batch-${b.id}.md` }, "Summary (markdown)")),
    el("div", { class: "table-wrap" }, el("table", { class: "results" }, head, el("tbody", {}, ...rows))));
}

async function pollBatch(id) {
  clearTimeout(batchTimer);
  try {
    const b = await api.batch(id);
    $("batch-result").replaceChildren(batchTable(b));
    $("batch-status").textContent = b.done ? "done" : "running…";
    if (!b.done) batchTimer = setTimeout(() => pollBatch(id), 1500);
    else showJobs();
  } catch (err) {
    showProblem("batch", err);
  }
}

async function submitBatch(event) {
  event.preventDefault();
  clearProblems("batch");
  const files = [...$("batch-files").files];
  if (!files.length) {
    showProblem("batch", { message: "choose one or more files, or an archive" }, "files");
    return;
  }
  $("batch-status").textContent = "uploading…";
  try {
    const b = await api.submitBatch({ files, solver: $("batch-solver").value, time_limit: $("batch-time").value });
    pollBatch(b.id);
    showJobs();
  } catch (err) {
    $("batch-status").textContent = "";
    showProblem("batch", err, "files");
  }
}

export function initJobs() {
  chart = new CostChart($("job-chart"));
  $("jobs-filter").addEventListener("submit", (e) => { e.preventDefault(); showJobs(); });
  $("jobs-state").addEventListener("change", () => showJobs());
  $("jobs-text").addEventListener("input", () => showJobs());
  $("batch-form").addEventListener("submit", submitBatch);
}
