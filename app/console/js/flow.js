// Min-cost flow: one DIMACS (or JSON) network, the flow solvers side by side with their cost,
// dual certificate and whether the proven-optimal ones agree.

import { api } from "./api.js";
import { $, checkboxList, checked, clearProblems, el, fmt, showProblem } from "./ui.js";

let file = null;

function table(res) {
  const body = $("flow-table").tBodies[0];
  body.replaceChildren(...res.rows.map((r) => el("tr", { dataset: { solver: r.solver } },
    el("td", { text: r.solver }), el("td", { text: r.status || "–" }), el("td", { class: "num", text: fmt(r.cost) }),
    el("td", { class: "num", text: fmt(r.gap_to_best) }), el("td", { class: "num", text: fmt(r.wall_time, 3) }),
    el("td", { class: "num", text: fmt(r.certificate?.dual_bound) }), el("td", { class: "num", text: fmt(r.certificate?.gap) }),
    el("td", {}, r.certificate ? el("span", { class: `badge ${r.certificate.optimal ? "ok" : ""}`, text: r.certificate.optimal ? "proven" : "bounded" }) : "–"),
    el("td", { class: "problem", text: r.error || r.violations.join("; ") }))));
  const agree = res.agree === null ? "no row is proven optimal, so agreement is not judged"
    : res.agree ? "the proven-optimal solvers agree" : "the solvers DISAGREE";
  const summary = $("flow-summary");
  summary.dataset.agree = String(res.agree);
  summary.textContent = `${res.network}: ${fmt(res.nodes)} nodes, ${fmt(res.arcs)} arcs; best ${fmt(res.best_cost)} `
    + `(${res.best_solver || "none"}); ${agree}.` + (res.infeasibility ? ` Infeasible: ${res.infeasibility.message}` : "");
}

async function submit(event) {
  event.preventDefault();
  clearProblems("flow");
  if (!file) {
    showProblem("flow", { message: "choose a network file or pick the example" }, "file");
    return;
  }
  const solvers = checked($("flow-solvers"));
  if (!solvers.length) {
    showProblem("flow", { message: "choose at least one solver" }, "solvers");
    return;
  }
  $("flow-status").textContent = "solving…";
  try {
    table(await api.flowCompare({ file, solvers: solvers.join(","), time_limit: $("flow-time").value }));
    $("flow-status").textContent = "";
  } catch (err) {
    $("flow-status").textContent = "";
    showProblem("flow", err, "file");
  }
}

async function loadSolvers() {
  try {
    const list = (await api.solvers("mincostflow")).solvers;
    checkboxList($("flow-solvers"), list, { name: "solvers", checked: () => true });
  } catch (err) {
    showProblem("flow", err, "solvers");
  }
}

export function initFlow() {
  $("flow-form").addEventListener("submit", submit);
  $("flow-file").addEventListener("change", (e) => { file = e.target.files[0] || null; $("flow-example").value = ""; });
  $("flow-example").addEventListener("change", async (e) => {
    if (!e.target.value) return;
    const name = e.target.value;
    file = new File([await (await fetch(`/console/examples/${name}`)).blob()], name);
  });
  loadSolvers();
}
