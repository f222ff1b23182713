// A canvas that keeps its backing store at the element's size times the device pixel ratio,
// and calls draw() at most once per animation frame however often it is asked to.

export class Surface {
  constructor(canvas, paint) {
    this.canvas = canvas;
    this.paint = paint;
    this.queued = false;
    this.width = 0;
    this.height = 0;
    new ResizeObserver(() => this.request()).observe(canvas);
  }

  request() {
    if (this.queued) return;
    this.queued = true;
    requestAnimationFrame(() => {
      this.queued = false;
      this.resize();
      if (this.width > 0 && this.height > 0) this.paint(this.ctx, this.width, this.height);
    });
  }

  resize() {
    const ratio = window.devicePixelRatio || 1;
    const rect = this.canvas.getBoundingClientRect();
    const w = Math.round(rect.width * ratio);
    const h = Math.round(rect.height * ratio);
    if (this.canvas.width !== w || this.canvas.height !== h) {
      this.canvas.width = w;
      this.canvas.height = h;
    }
    this.ctx = this.canvas.getContext("2d");
    this.ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
    this.width = rect.width;
    this.height = rect.height;
  }
}

// Round axis ticks: about `count` values between lo and hi at 1, 2 or 5 times a power of 10.
export function ticks(lo, hi, count = 5) {
  if (!(hi > lo)) return [lo];
  const raw = (hi - lo) / count;
  const power = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * power).find((s) => s >= raw) || raw;
  const out = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) out.push(v);
  return out;
}

export function tickLabel(v) {
  const a = Math.abs(v);
  if (a >= 1e6) return `${(v / 1e6).toPrecision(3)}M`;
  if (a >= 1e4) return `${(v / 1e3).toPrecision(3)}k`;
  return Number(v.toPrecision(4)).toString();
}
