// The best cost over time, one step line per solver, drawn on a canvas. The canvas's
// data-series attribute counts the series that have points (the browser tests read it).

import { Surface, ticks, tickLabel } from "./canvas.js";

export class CostChart {
  constructor(canvas) {
    this.series = new Map(); // name -> { colour, points: [[t, cost], ...] }
    this.xMax = 1;
    this.surface = new Surface(canvas, (ctx, w, h) => this.paint(ctx, w, h));
    this.canvas = canvas;
  }

  clear(xMax = 1) {
    this.series.clear();
    this.xMax = xMax;
    this.update();
  }

  ensure(name, colour) {
    if (!this.series.has(name)) this.series.set(name, { colour, points: [] });
    return this.series.get(name);
  }

  // A live point: kept only when it improves (the curve never rises).
  add(name, colour, t, cost) {
    if (cost === null || cost === undefined || !Number.isFinite(t)) return;
    const s = this.ensure(name, colour);
    const last = s.points[s.points.length - 1];
    if (last && cost >= last[1]) {
      if (t > last[0]) s.points.push([t, last[1]]);
    } else s.points.push([t, cost]);
    this.update();
  }

  // The whole series from /v1/jobs/{id}/progress replaces the live points.
  set(name, colour, points) {
    this.ensure(name, colour).points = points.slice();
    this.update();
  }

  update() {
    const withPoints = [...this.series.values()].filter((s) => s.points.length).length;
    this.canvas.dataset.series = String(withPoints);
    this.surface.request();
  }

  paint(ctx, w, h) {
    ctx.clearRect(0, 0, w, h);
    const pad = { l: 64, r: 12, t: 12, b: 34 };
    const all = [...this.series.values()].flatMap((s) => s.points);
    ctx.font = "12px system-ui, sans-serif";
    ctx.fillStyle = "#57606a";
    if (!all.length) {
      ctx.fillText("The best cost of each solver appears here as it runs.", pad.l, h / 2);
      return;
    }
    const xMax = Math.max(this.xMax, ...all.map((p) => p[0])) || 1;
    let yLo = Math.min(...all.map((p) => p[1]));
    let yHi = Math.max(...all.map((p) => p[1]));
    if (yHi === yLo) { yHi += Math.abs(yHi) * 0.01 + 1; yLo -= Math.abs(yLo) * 0.01 + 1; }
    const span = yHi - yLo;
    yLo -= span * 0.05; yHi += span * 0.05;
    const X = (t) => pad.l + (t / xMax) * (w - pad.l - pad.r);
    const Y = (c) => pad.t + (1 - (c - yLo) / (yHi - yLo)) * (h - pad.t - pad.b);
    ctx.strokeStyle = "#d0d7de";
    ctx.lineWidth = 1;
    ctx.textAlign = "right";
    ctx.textBaseline = "middle";
    for (const v of ticks(yLo, yHi, 5)) {
      ctx.beginPath(); ctx.moveTo(pad.l, Y(v)); ctx.lineTo(w - pad.r, Y(v)); ctx.stroke();
      ctx.fillText(tickLabel(v), pad.l - 6, Y(v));
    }
    ctx.textAlign = "center";
    ctx.textBaseline = "top";
    for (const v of ticks(0, xMax, 6)) ctx.fillText(tickLabel(v), X(v), h - pad.b + 6);
    ctx.fillText("seconds", (pad.l + w - pad.r) / 2, h - 14);
    let legendY = pad.t + 4;
    for (const [name, s] of this.series) {
      if (!s.points.length) continue;
      ctx.strokeStyle = s.colour;
      ctx.lineWidth = 2;
      ctx.beginPath();
      s.points.forEach(([t, c], i) => {
        if (i === 0) ctx.moveTo(X(t), Y(c));
        else { ctx.lineTo(X(t), Y(s.points[i - 1][1])); ctx.lineTo(X(t), Y(c)); }
      });
      ctx.stroke();
      // the best so far as a dot: a one-point series (a construction) is seen too
      const [tEnd, cEnd] = s.points[s.points.length - 1];
      ctx.fillStyle = s.colour;
      ctx.beginPath();
      ctx.arc(X(tEnd), Y(cEnd), 3.5, 0, 2 * Math.PI);
      ctx.fill();
      ctx.textAlign = "right";
      const last = s.points[s.points.length - 1][1];
      ctx.fillText(`${name} ${tickLabel(last)}`, w - pad.r - 4, legendY);
      legendY += 16;
    }
  }
}
