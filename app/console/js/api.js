// The console's one door to the service: every call goes to the public /v1 API.
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

async function call(path, options = {}) {
  let response;
  try {
    response = await fetch(path, options);
  } catch (err) {
    throw new ApiProblem(0, { title: "No answer", detail: `the service did not answer (${err.message})` });
  }
  const type = response.headers.get("content-type") || "";
  if (!response.ok) {
    let body = { title: response.statusText, detail: `HTTP ${response.status}` };
    if (type.includes("json")) {
      try { body = await response.json(); } catch (_) { /* keep the status line */ }
    }
    throw new ApiProblem(response.status, body);
  }
  if (type.includes("json")) return response.json();
  return response.text();
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

// Follow a job's server-sent events: onProgress(status) per change, onEnd(status) once.
// EventSource reconnects by itself after a dropped connection; a "shutdown" event (the
// server stopping) is reported and the stream closed.
export function follow(id, { onProgress, onEnd, onError }) {
  const source = new EventSource(`/v1/jobs/${encodeURIComponent(id)}/events`);
  let ended = false;
  source.addEventListener("progress", (e) => onProgress(JSON.parse(e.data)));
  source.addEventListener("end", (e) => {
    ended = true;
    source.close();
    onEnd(JSON.parse(e.data));
  });
  source.addEventListener("shutdown", (e) => {
    source.close();
    if (onError) onError(JSON.parse(e.data).message);
  });
  source.onerror = () => {
    if (!ended && source.readyState === EventSource.CLOSED && onError) onError("the event stream closed");
  };
  return () => source.close();
}
