// The console's entry point: one page, four views chosen by the URL's fragment (#solve,
// #jobs, #jobs/ID, #scheduling, #flow), so the back button and bookmarks work without
// query strings.

import { fetchBlob, hasKey, setKey } from "./api.js";
import { initFlow } from "./flow.js";
import { initJobs, openJob, showJobs } from "./jobs.js";
import { initScheduling } from "./scheduling.js";
import { initSolve } from "./solve.js";

// Long main-thread tasks, for the benchmark (benchmarks/console.py reads them).
window.__longtasks = [];
try {
  new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) window.__longtasks.push(entry.duration);
  }).observe({ type: "longtask", buffered: true });
} catch (_) { /* a browser without the long-task API */ }

const VIEWS = ["solve", "jobs", "scheduling", "flow"];

function route() {
  const [view, arg] = (location.hash.replace(/^#/, "") || "solve").split("/");
  const name = VIEWS.includes(view) ? view : "solve";
  for (const v of VIEWS) document.getElementById(`view-${v}`).hidden = v !== name;
  document.querySelectorAll("nav a[data-view]").forEach((a) => {
    if (a.dataset.view === name) a.setAttribute("aria-current", "page");
    else a.removeAttribute("aria-current");
  });
  if (name === "jobs") {
    showJobs();
    if (arg) openJob(decodeURIComponent(arg));
  }
}

const API_ROOT = "/v1";

// With an API key, a download link of the service cannot send it: fetch it with the key.
document.addEventListener("click", async (event) => {
  const link = event.target.closest("a[download]");
  if (!link || !hasKey() || !link.getAttribute("href").startsWith(`${API_ROOT}/`)) return;
  event.preventDefault();
  let blob;
  try {
    blob = await fetchBlob(link.getAttribute("href"));
  } catch (err) {
    link.title = err.message;
    return;
  }
  const url = URL.createObjectURL(blob);
  const a = Object.assign(document.createElement("a"), { href: url, download: link.download });
  a.click();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
});

window.addEventListener("cosolve-key-needed", (event) => {
  const form = document.getElementById("key-form");
  form.hidden = false;
  document.getElementById("key-problem").textContent = event.detail || "this server asks for an API key";
  document.getElementById("key").focus();
});
document.getElementById("key-form").addEventListener("submit", (event) => {
  event.preventDefault();
  setKey(document.getElementById("key").value.trim());
  location.reload();
});

initSolve();
initJobs();
initScheduling();
initFlow();
window.addEventListener("hashchange", () => { route(); document.getElementById("main").focus(); });
route();
document.body.dataset.ready = "true";
