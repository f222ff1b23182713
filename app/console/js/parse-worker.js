// Reads an instance file's coordinates in a worker, off the page's main thread, so a
// 100,000-node file never freezes the page. This is for drawing only: the service reads,
// checks and solves the file itself, and its answer is what the console reports.

function header(lines) {
  const head = {};
  for (const line of lines) {
    const s = line.trim();
    const upper = s.toUpperCase();
    if (upper.split(/[\s:]/)[0].endsWith("_SECTION") || upper === "EOF") break;
    const at = s.indexOf(":");
    if (at > 0) head[s.slice(0, at).trim().toUpperCase()] = s.slice(at + 1).trim();
  }
  return head;
}

function sectionStart(lines, name) {
  for (let i = 0; i < lines.length; i++) {
    const first = lines[i].trim().split(/[\s:]/)[0].toUpperCase();
    if (first === name) return i + 1;
  }
  return -1;
}

function readTsplib(text, filename) {
  const lines = text.split(/\r?\n/);
  const head = header(lines);
  const n = parseInt(head.DIMENSION || "0", 10);
  const type = (head.TYPE || "").toUpperCase();
  let kind = type.startsWith("CVRPTW") || /\.vrptw(\.gz)?$/i.test(filename) ? "cvrptw"
    : type.startsWith("CVRP") || type === "VRP" ? "cvrp" : type.startsWith("TSP") ? "tsp" : null;
  if (sectionStart(lines, "TIME_WINDOW_SECTION") >= 0) kind = "cvrptw";
  if (!kind) kind = /\.vrp(\.gz)?$/i.test(filename) ? "cvrp" : "tsp";
  const info = {
    kind, name: head.NAME || filename, nodes: n || null,
    capacity: head.CAPACITY ? Number(head.CAPACITY) : null,
    vehicles: head.VEHICLES ? Number(head.VEHICLES) : null,
    distance: head.EDGE_WEIGHT_TYPE || null, depot: kind === "tsp" ? null : 0, coords: null,
  };
  const start = sectionStart(lines, "NODE_COORD_SECTION");
  if (start < 0 || !n) return info;
  const coords = new Float64Array(2 * n);
  let count = 0;
  for (let i = start; i < lines.length && count < n; i++) {
    const parts = lines[i].trim().split(/\s+/);
    if (parts.length < 3) {
      if (parts[0] && /^[A-Z_]+/i.test(parts[0])) break;
      continue;
    }
    coords[2 * count] = Number(parts[1]);
    coords[2 * count + 1] = Number(parts[2]);
    count++;
  }
  if (count === n && coords.every(Number.isFinite)) info.coords = coords;
  const depotAt = sectionStart(lines, "DEPOT_SECTION");
  if (depotAt >= 0 && kind !== "tsp") {
    const id = parseInt(lines[depotAt].trim().split(/\s+/)[0], 10);
    if (id >= 1 && id <= n) info.depot = id - 1;
  }
  return info;
}

function readJson(text, filename) {
  let doc = JSON.parse(text);
  if (doc && typeof doc.instance === "object") doc = doc.instance;
  const coords = Array.isArray(doc.coords) ? doc.coords : null;
  const n = coords ? coords.length : Array.isArray(doc.distance_matrix) ? doc.distance_matrix.length : null;
  const kind = doc.problem || (doc.time_windows ? "cvrptw" : doc.demands ? "cvrp" : "tsp");
  const info = {
    kind, name: doc.name || filename, nodes: n, capacity: doc.capacity ?? null,
    vehicles: doc.max_vehicles ?? null, distance: doc.distance || (coords ? "exact" : "EXPLICIT"),
    depot: kind === "tsp" ? null : doc.depot ?? 0, coords: null,
  };
  if (coords) {
    const flat = new Float64Array(2 * coords.length);
    coords.forEach((c, i) => { flat[2 * i] = Number(c[0]); flat[2 * i + 1] = Number(c[1]); });
    if (flat.every(Number.isFinite)) info.coords = flat;
  }
  return info;
}

async function text(file) {
  let buffer = await file.arrayBuffer();
  const bytes = new Uint8Array(buffer, 0, Math.min(2, buffer.byteLength));
  if (bytes[0] === 0x1f && bytes[1] === 0x8b) {
    const stream = new Blob([buffer]).stream().pipeThrough(new DecompressionStream("gzip"));
    buffer = await new Response(stream).arrayBuffer();
  }
  return new TextDecoder("utf-8").decode(buffer);
}

self.onmessage = async (event) => {
  const { file } = event.data;
  const filename = file.name || "instance";
  try {
    const body = await text(file);
    const base = filename.replace(/\.gz$/i, "");
    const info = /\.json$/i.test(base) ? readJson(body, filename) : readTsplib(body, filename);
    const transfer = info.coords ? [info.coords.buffer] : [];
    self.postMessage({ ok: true, info }, transfer);
  } catch (err) {
    // not a failure of the console: the service gives the real reason when it reads the file
    self.postMessage({ ok: false, message: String(err && err.message ? err.message : err) });
  }
};
