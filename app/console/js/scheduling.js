// Workflow scheduling: a simulation runs as a job (its progress is workflows simulated), and
// its answer gives the flowtime table per policy and each policy's whole schedule, which the
// Gantt chart draws: one row per VM, one bar per task, a colour per workflow.

import { api, follow } from "./api.js";
import { Surface, ticks, tickLabel } from "./canvas.js";
import { $, checkboxList, checked, clearProblems, colour, el, fmt, pct, showProblem } from "./ui.js";

let result = null;
let gantt;

function table(res) {
  const body = $("sched-table").tBodies[0];
  body.replaceChildren(...res.rows.map((r) => el("tr", { dataset: { policy: r.policy } },
    el("td", { text: r.policy + (r.policy === res.best_policy ? " (best)" : "") }), el("td", { text: r.kind || "–" }),
    el("td", { class: "num", text: fmt(r.mean_flowtime, 5) }), el("td", { class: "num", text: fmt(r.median_flowtime, 5) }),
    el("td", { class: "num", text: fmt(r.p95_flowtime, 5) }), el("td", { class: "num", text: fmt(r.makespan, 5) }),
    el("td", { class: "num", text: r.utilization === null ? "–" : `${(100 * r.utilization).toFixed(1)}%` }),
    el("td", { class: "num", text: pct(r.gap_to_best) }),
    el("td", {}, r.error ? el("span", { class: "problem", text: r.error })
      : el("span", { class: `badge ${r.checked ? "ok" : "bad"}`, text: r.checked ? "checked" : "failed" })))));
  $("sched-warnings").textContent = res.warnings.map((w) => w.detail).join(" ");
  const pick = $("sched-gantt-policy");
  pick.replaceChildren(...res.rows.filter((r) => r.schedule).map((r) => el("option", { value: r.policy, text: r.policy })));
  if (res.best_policy) pick.value = res.best_policy;
  gantt.request();
}

function paintGantt(ctx, w, h) {
  ctx.clearRect(0, 0, w, h);
  ctx.font = "11px system-ui, sans-serif";
  const row = result?.rows.find((r) => r.policy === $("sched-gantt-policy").value);
  if (!row || !row.schedule) {
    ctx.fillStyle = "#57606a";
    ctx.fillText("Run a simulation to see each VM's tasks over time.", 12, 24);
    return;
  }
  const tasks = row.schedule.tasks;
  const vms = result.vcpus.length;
  const end = Math.max(...tasks.map((t) => t.finish), 1);
  const pad = { l: 70, r: 10, t: 8, b: 30 };
  const lane = (h - pad.t - pad.b) / vms;
  const X = (t) => pad.l + (t / end) * (w - pad.l - pad.r);
  ctx.textBaseline = "middle";
  ctx.textAlign = "right";
  for (let v = 0; v < vms; v++) {
    ctx.fillStyle = v % 2 ? "#f6f8fa" : "#fff";
    ctx.fillRect(pad.l, pad.t + v * lane, w - pad.l - pad.r, lane);
    if (lane >= 9) {
      ctx.fillStyle = "#57606a";
      ctx.fillText(`VM ${v} (${result.vcpus[v]})`, pad.l - 4, pad.t + (v + 0.5) * lane);
    }
  }
  const flows = Math.max(...tasks.map((t) => t.workflow)) + 1;
  for (const t of tasks) {
    ctx.fillStyle = colour(t.workflow, flows);
    ctx.fillRect(X(t.start), pad.t + t.vm * lane + 1, Math.max(X(t.finish) - X(t.start), 0.75), Math.max(lane - 2, 1));
  }
  ctx.fillStyle = "#57606a";
  ctx.textAlign = "center";
  ctx.textBaseline = "top";
  for (const v of ticks(0, end, 8)) ctx.fillText(tickLabel(v), X(v), h - pad.b + 4);
  ctx.fillText("seconds (one colour per workflow)", (pad.l + w) / 2, h - 14);
  $("sched-gantt").dataset.tasks = String(tasks.length);
}

async function submit(event) {
  event.preventDefault();
  clearProblems("sched");
  const policies = checked($("sched-policies"));
  const files = [...$("sched-files").files];
  const options = { pool: $("sched-pool").value, workflows_count: Number($("sched-count").value),
    seed: Number($("sched-seed").value), schedule: true };
  const rates = $("sched-rates").value;
  $("sched-status").textContent = "submitting…";
  let job;
  try {
    if (files.length) {
      job = await api.simulateJobUpload({ ...options, rates, policies: policies.join(","), file: files });
    } else {
      const parsed = rates.split(",").map((r) => Number(r.trim()));
      job = await api.simulateJob({ ...options, rates: parsed.some(Number.isNaN) ? rates : parsed, policies });
    }
  } catch (err) {
    $("sched-status").textContent = "";
    showProblem("sched", err);
    return;
  }
  follow(job.id, {
    onProgress: (st) => { $("sched-status").textContent = `simulating… ${st.progress.message || ""}`; },
    onEnd: async (st) => {
      if (st.state !== "succeeded") {
        $("sched-status").textContent = `${st.state}: ${st.error || ""}`;
        return;
      }
      try {
        result = await api.solution(st.id);
        table(result);
        $("sched-status").textContent = `done in ${fmt(st.progress.elapsed, 3)} s`;
      } catch (err) {
        showProblem("sched", err);
      }
    },
    onError: (message) => { $("sched-status").textContent = message; },
  });
}

async function loadPolicies() {
  try {
    const list = await api.policies();
    const defaults = ["heft_slack", "heft", "eft", "peft"];
    checkboxList($("sched-policies"), list, { name: "policies", checked: (p) => defaults.includes(p.name) });
  } catch (err) {
    showProblem("sched", err, "policies");
  }
}

export function initScheduling() {
  gantt = new Surface($("sched-gantt"), paintGantt);
  $("sched-form").addEventListener("submit", submit);
  $("sched-gantt-policy").addEventListener("change", () => gantt.request());
  loadPolicies();
}
