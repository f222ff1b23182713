// A solution's routes on a canvas: depot marked, one colour per route (a TSP as one tour).
// Large instances stay responsive by level of detail: each frame draws at most about
// SEGMENT_BUDGET segments and POINT_BUDGET points of what is in view, taking every k-th stop
// when zoomed out and every stop once zoomed in far enough. Wheel or +/- zooms, dragging or
// the arrow keys pan, 0 or a double click fits the whole instance again.

import { Surface } from "./canvas.js";
import { colour } from "./ui.js";

const SEGMENT_BUDGET = 30000;
const POINT_BUDGET = 20000;

export class RouteView {
  constructor(canvas) {
    this.canvas = canvas;
    this.coords = null; // Float64Array [x0, y0, x1, y1, ...]
    this.depot = null;
    this.routes = [];
    this.kind = "tsp";
    this.zoom = 1;
    this.cx = 0;
    this.cy = 0;
    this.surface = new Surface(canvas, (ctx, w, h) => this.paint(ctx, w, h));
    this.bindInput();
  }

  setInstance(info) {
    this.coords = info.coords;
    this.depot = info.depot;
    this.kind = info.kind;
    this.routes = [];
    this.canvas.dataset.nodes = info.coords ? String(info.coords.length / 2) : "0";
    this.canvas.dataset.routes = "0";
    this.fit();
  }

  // final: the job's answer (data-plan="final"; its first paint sets data-drawn-at and fires
  // "drawn"); otherwise a running job's best plan so far (data-plan="incumbent").
  setRoutes(routes, final = true) {
    this.routes = routes.filter((r) => r.length);
    this.canvas.dataset.routes = String(this.routes.length);
    this.canvas.dataset.plan = final ? "final" : "incumbent";
    this.firstDraw = final;
    this.surface.request();
  }

  fit() {
    if (!this.coords) { this.surface.request(); return; }
    let x0 = Infinity, y0 = Infinity, x1 = -Infinity, y1 = -Infinity;
    const c = this.coords;
    for (let i = 0; i < c.length; i += 2) {
      if (c[i] < x0) x0 = c[i];
      if (c[i] > x1) x1 = c[i];
      if (c[i + 1] < y0) y0 = c[i + 1];
      if (c[i + 1] > y1) y1 = c[i + 1];
    }
    this.bounds = { x0, y0, x1, y1 };
    this.cx = (x0 + x1) / 2;
    this.cy = (y0 + y1) / 2;
    this.zoom = 1;
    this.surface.request();
  }

  // Scale of the fitted view: screen pixels per instance unit at zoom 1.
  baseScale(w, h) {
    const b = this.bounds;
    const sx = (w - 16) / Math.max(b.x1 - b.x0, 1e-9);
    const sy = (h - 16) / Math.max(b.y1 - b.y0, 1e-9);
    return Math.min(sx, sy);
  }

  paint(ctx, w, h) {
    const started = performance.now();
    ctx.fillStyle = "#fff";
    ctx.fillRect(0, 0, w, h);
    if (!this.coords) {
      ctx.fillStyle = "#57606a";
      ctx.font = "13px system-ui, sans-serif";
      ctx.fillText("No coordinates to draw (a distance matrix, or a file the console could not read).", 12, h / 2);
      return;
    }
    const c = this.coords;
    const s = this.baseScale(w, h) * this.zoom;
    const ox = w / 2 - this.cx * s;
    const oy = h / 2 + this.cy * s; // y grows upwards, as in the instance
    const inView = (i) => {
      const x = ox + c[2 * i] * s, y = oy - c[2 * i + 1] * s;
      return x >= -2 && x <= w + 2 && y >= -2 && y <= h + 2;
    };
    const n = c.length / 2;
    let visible = 0;
    for (let i = 0; i < n; i++) if (inView(i)) visible++;
    const stride = Math.max(1, Math.ceil(visible / SEGMENT_BUDGET));
    this.canvas.dataset.stride = String(stride);
    // the stops
    const pointStride = Math.max(1, Math.ceil(visible / POINT_BUDGET));
    const dot = n > 5000 ? 1.5 : n > 500 ? 2.5 : 3.5;
    ctx.fillStyle = "#8c959f";
    for (let i = 0; i < n; i += pointStride) {
      if (i === this.depot || !inView(i)) continue;
      ctx.fillRect(ox + c[2 * i] * s - dot / 2, oy - c[2 * i + 1] * s - dot / 2, dot, dot);
    }
    // the routes: every stride-th stop of each, a route closed through the depot
    const many = this.routes.length;
    ctx.lineWidth = n > 5000 ? 0.8 : 1.6;
    ctx.lineJoin = "round";
    this.routes.forEach((route, r) => {
      const stops = this.kind === "tsp" ? route : [this.depot, ...route, this.depot];
      ctx.strokeStyle = this.kind === "tsp" ? "#1f6feb" : colour(r, many);
      ctx.beginPath();
      let pen = false;
      const last = stops.length - 1;
      const tsp = this.kind === "tsp";
      for (let k = 0; k <= last + (tsp ? 1 : 0); k += 1) {
        const atEnd = k >= last;
        if (!atEnd && k % stride !== 0) continue;
        const i = tsp && k > last ? stops[0] : stops[Math.min(k, last)];
        const x = ox + c[2 * i] * s, y = oy - c[2 * i + 1] * s;
        if (pen) ctx.lineTo(x, y); else { ctx.moveTo(x, y); pen = true; }
      }
      ctx.stroke();
    });
    if (this.depot !== null && this.depot !== undefined) {
      const x = ox + c[2 * this.depot] * s, y = oy - c[2 * this.depot + 1] * s;
      ctx.fillStyle = "#000";
      ctx.fillRect(x - 6, y - 6, 12, 12);
      ctx.strokeStyle = "#fff";
      ctx.lineWidth = 2;
      ctx.strokeRect(x - 6, y - 6, 12, 12);
    }
    const took = performance.now() - started;
    this.canvas.dataset.paintMs = took.toFixed(1);
    if (this.firstDraw && this.routes.length) {
      this.firstDraw = false;
      this.canvas.dataset.drawnAt = String(performance.now());
      this.canvas.dispatchEvent(new CustomEvent("drawn"));
    }
  }

  bindInput() {
    const cv = this.canvas;
    cv.tabIndex = 0;
    const zoomAt = (factor, px, py) => {
      if (!this.coords) return;
      const rect = cv.getBoundingClientRect();
      const s = this.baseScale(rect.width, rect.height) * this.zoom;
      const mx = px ?? rect.width / 2, my = py ?? rect.height / 2;
      // keep the point under the cursor where it is
      const wx = this.cx + (mx - rect.width / 2) / s;
      const wy = this.cy - (my - rect.height / 2) / s;
      this.zoom = Math.min(Math.max(this.zoom * factor, 1), 1e5);
      const s2 = this.baseScale(rect.width, rect.height) * this.zoom;
      this.cx = wx - (mx - rect.width / 2) / s2;
      this.cy = wy + (my - rect.height / 2) / s2;
      this.surface.request();
    };
    cv.addEventListener("wheel", (e) => {
      e.preventDefault();
      const rect = cv.getBoundingClientRect();
      zoomAt(e.deltaY < 0 ? 1.25 : 0.8, e.clientX - rect.left, e.clientY - rect.top);
    }, { passive: false });
    let drag = null;
    cv.addEventListener("pointerdown", (e) => { drag = [e.clientX, e.clientY]; cv.setPointerCapture(e.pointerId); });
    cv.addEventListener("pointerup", () => { drag = null; });
    cv.addEventListener("pointermove", (e) => {
      if (!drag || !this.coords) return;
      const rect = cv.getBoundingClientRect();
      const s = this.baseScale(rect.width, rect.height) * this.zoom;
      this.cx -= (e.clientX - drag[0]) / s;
      this.cy += (e.clientY - drag[1]) / s;
      drag = [e.clientX, e.clientY];
      this.surface.request();
    });
    cv.addEventListener("dblclick", () => this.fit());
    cv.addEventListener("keydown", (e) => {
      const rect = cv.getBoundingClientRect();
      const step = 40 / (this.bounds ? this.baseScale(rect.width, rect.height) * this.zoom : 1);
      const keys = {
        "+": () => zoomAt(1.25), "=": () => zoomAt(1.25), "-": () => zoomAt(0.8), "0": () => this.fit(),
        ArrowLeft: () => { this.cx -= step; }, ArrowRight: () => { this.cx += step; },
        ArrowUp: () => { this.cy += step; }, ArrowDown: () => { this.cy -= step; },
      };
      if (!keys[e.key]) return;
      e.preventDefault();
      keys[e.key]();
      this.surface.request();
    });
  }

  png(name, save) {
    this.canvas.toBlob((blob) => save(blob, name), "image/png");
  }
}
