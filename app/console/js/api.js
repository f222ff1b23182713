// The console's one door to the service: every call goes to the public /v1 API.
import { readEvents } from "./sse.js";

// A refusal arrives as an RFC 9457 problem; it is thrown as ApiProblem so that a view can put
// its message next to the field it names.

export class ApiProblem extends Error {
  constructor(status, body) {
    super(body.detail || body.title || `HTTP ${status}`);
    this.status = status;
    this.body = body;
    this.field = body.field || null;
    this.errors = Array.isArray(body.errors) ? body.errors : [];
  }
}

// A server started with COSOLVE_API_KEYS asks every /v1 request for a key. The console asks
// for it once (a 401 raises "cosolve-key-needed"), keeps it for this tab only
// (sessionStorage), and sends it as a bearer token.
let key = sessionStorage.getItem("cosolve-key");
export const hasKey = () => Boolean(key);
export function setKey(value) {
  key = value || null;
  if (key) sessionStorage.setItem("cosolve-key", key);
  else sessionStorage.removeItem("cosolve-key");
}
const authorized = (options = {}) =>
  (key ? { ...options, headers: { ...(options.headers || {}), authorization: `Bearer ${key}` } } : options);

async function call(path, options = {}) {
  let response;
  try {
    response = await fetch(path, authorized(options));
  } catch (err) {
    throw new ApiProblem(0, { title: "No answer", detail: `the service did not answer (${err.message})` });
  }
  const type = response.headers.get("content-type") || "";
  if (!response.ok) {
    let body = { title: response.statusText, detail: `HTTP ${response.status}` };
    if (type.includes("json")) {
      try { body = await response.json(); } catch (_) { /* keep the status line */ }
    }
    if (response.status === 401) window.dispatchEvent(new CustomEvent("cosolve-key-needed", { detail: body.detail }));
    throw new ApiProblem(response.status, body);
  }
  if (type.includes("json")) return response.json();
  return response.text();
}

// A file the service serves, as a blob (downloads and images when a key must be sent: a
// plain link or <img> cannot send one).
export async function fetchBlob(path) {
  const response = await fetch(path, authorized());
  if (!response.ok) throw new ApiProblem(response.status, { detail: `HTTP ${response.status}` });
  return response.blob();
}

function form(fields) {
  const data = new FormData();
  for (const [name, value] of Object.entries(fields)) {
    if (value === undefined || value === null || value === "") continue;
    if (Array.isArray(value)) value.forEach((v) => data.append(name, v, v.name));
    else if (value instanceof Blob) data.append(name, value, value.name || name);
    else data.append(name, String(value));
  }
  return data;
}

const json = (body) => ({
  method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body),
});

export const api = {
  solvers: (problem) => call(problem ? `/v1/solvers?problem=${encodeURIComponent(problem)}` : "/v1/solvers"),
  submitJob: (fields) => call("/v1/jobs", { method: "POST", body: form(fields) }),
  job: (id) => call(`/v1/jobs/${encodeURIComponent(id)}`),
  jobs: (query) => call(`/v1/jobs?${new URLSearchParams(query)}`),
  cancelJob: (id) => call(`/v1/jobs/${encodeURIComponent(id)}`, { method: "DELETE" }),
  solution: (id) => call(`/v1/jobs/${encodeURIComponent(id)}/solution?format=json`),
  progress: (id) => call(`/v1/jobs/${encodeURIComponent(id)}/progress?format=json`),
  incumbent: (id) => call(`/v1/jobs/${encodeURIComponent(id)}/incumbent`),
  submitBatch: (fields) => call("/v1/batches", { method: "POST", body: form(fields) }),
  batch: (id) => call(`/v1/batches/${encodeURIComponent(id)}?format=json`),
  policies: () => call("/v1/scheduling/policies"),
  simulateJob: (body) => call("/v1/scheduling/simulate/jobs", json(body)),
  simulateJobUpload: (fields) => call("/v1/scheduling/simulate/jobs", { method: "POST", body: form(fields) }),
  flowCompare: (fields) => call("/v1/flow/min-cost/compare", { method: "POST", body: form(fields) }),
};

// Download links are plain URLs (the browser saves what the service serves).
export const links = {
  solution: (id, format) => `/v1/jobs/${encodeURIComponent(id)}/solution?format=${format}`,
  progressSvg: (id) => `/v1/jobs/${encodeURIComponent(id)}/progress?format=svg`,
  batchZip: (id) => `/v1/batches/${encodeURIComponent(id)}/results.zip`,
  batchMarkdown: (id) => `/v1/batches/${encodeURIComponent(id)}?format=md`,
};

// Follow a job: onProgress(status) per change, onEnd(status) once. Up to MAX_STREAMS jobs
// are followed through their server-sent events; more are polled, since a browser keeps at
// most six HTTP/1.1 connections to one host and every open stream holds one (a seventh
// request, the solution's download, would wait for a stream to end). EventSource reconnects
// by itself after a dropped connection; a "shutdown" event (the server stopping) is reported.
// With a key the stream is read through fetch() (sse.js), which sends it: an EventSource
// cannot, and polling showed progress a second late at best.
const MAX_STREAMS = 3;
const POLL_MS = 1000;
const RETRY_MS = 1000;
let streams = 0;

export function follow(id, handlers) {
  if (streams >= MAX_STREAMS) return poll(id, handlers);
  if (key && typeof ReadableStream === "undefined") return poll(id, handlers);
  streams += 1;
  let open = true;
  let stopStream = () => {};
  const close = () => {
    if (open) { open = false; streams -= 1; stopStream(); }
  };
  const { onProgress, onEnd, onError } = handlers;
  const onEvent = (type, data) => {
    if (type === "progress") onProgress(JSON.parse(data));
    else if (type === "end") { close(); onEnd(JSON.parse(data)); }
    else if (type === "shutdown") {
      close();
      if (onError) onError(JSON.parse(data).message);
    }
  };
  if (key) {
    stopStream = streamWithKey(id, onEvent, () => open, (message) => {
      // the stream cannot be read (refused, or dropped again and again): poll instead
      close();
      if (message && onError) onError(message);
      else if (!message) poll(id, handlers);
    });
    return close;
  }
  const source = new EventSource(`/v1/jobs/${encodeURIComponent(id)}/events`);
  stopStream = () => source.close();
  for (const type of ["progress", "end", "shutdown"]) {
    source.addEventListener(type, (e) => onEvent(type, e.data));
  }
  source.onerror = () => {
    if (open && source.readyState === EventSource.CLOSED) {
      close();
      if (onError) onError("the event stream closed");
    }
  };
  return close;
}

// The job's events through fetch() with the key, reconnecting after a dropped connection as
// an EventSource would; gives up (giveUp(message), or giveUp() to poll) on a refusal or after
// a few drops in a row. Returns the function that aborts it.
function streamWithKey(id, onEvent, isOpen, giveUp) {
  const abort = new AbortController();
  let drops = 0;
  const connect = async () => {
    let response;
    try {
      response = await fetch(`/v1/jobs/${encodeURIComponent(id)}/events`,
        authorized({ headers: { accept: "text/event-stream" }, signal: abort.signal }));
    } catch (_) {
      response = null;
    }
    if (!isOpen()) return;
    if (response && !response.ok) {
      let detail = `HTTP ${response.status}`;
      try { detail = (await response.json()).detail || detail; } catch (_) { /* the status */ }
      if (response.status === 401) window.dispatchEvent(new CustomEvent("cosolve-key-needed", { detail }));
      giveUp(response.status === 401 || response.status === 404 ? detail : undefined);
      return;
    }
    if (response && response.body) {
      try {
        await readEvents(response, (event) => {
          drops = 0;
          onEvent(event.type, event.data);
          return isOpen();
        });
      } catch (_) { /* dropped: reconnect below */ }
    }
    if (!isOpen()) return;
    drops += 1;
    if (!response || !response.body || drops > 3) { giveUp(); return; }
    setTimeout(connect, RETRY_MS);
  };
  connect();
  return () => abort.abort();
}

const FINAL = ["succeeded", "failed", "cancelled"];

function poll(id, { onProgress, onEnd, onError }) {
  let stopped = false;
  let last = null;
  const tick = async () => {
    if (stopped) return;
    try {
      const status = await api.job(id);
      const seen = JSON.stringify([status.state, status.progress]);
      if (FINAL.includes(status.state)) { stopped = true; onEnd(status); return; }
      if (seen !== last) { last = seen; onProgress(status); }
    } catch (err) {
      if (err.status === 404) { stopped = true; if (onError) onError(err.message); return; }
    }
    setTimeout(tick, POLL_MS);
  };
  tick();
  return () => { stopped = true; };
}
