// Small DOM helpers shared by the views: element building, problems next to their fields,
// number formatting and file downloads.

export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "text") node.textContent = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else if (key === "dataset") Object.assign(node.dataset, value);
    else node.setAttribute(key, value === true ? "" : value);
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

export const $ = (id) => document.getElementById(id);

// The form's field a problem names: "file.coords[3]" -> "file", "instance.coords" -> "file"
// (the console always uploads), "rates[0]" -> "rates".
function fieldKey(field) {
  if (!field) return null;
  const head = String(field).split(/[.[]/)[0];
  return head === "instance" || head === "network" ? "file" : head;
}

// Clear every problem of the form whose element ids start with prefix.
export function clearProblems(prefix) {
  document.querySelectorAll(`[id^="${prefix}-"][id$="-problem"]`).forEach((p) => {
    p.textContent = "";
    p.closest(".field")?.classList.remove("invalid");
  });
}

// Put an ApiProblem (or any error) next to the field it names, else under the form; the
// field's input is marked invalid and described by the message.
export function showProblem(prefix, error, fallbackField) {
  const items = [];
  if (error.errors && error.errors.length) {
    for (const e of error.errors) items.push([fieldKey(e.field), `${e.field}: ${e.message}`]);
  } else {
    items.push([fieldKey(error.field) || fallbackField || null, error.message]);
  }
  for (const [field, message] of items) {
    const target = (field && $(`${prefix}-${field}-problem`)) || $(`${prefix}-form-problem`);
    if (!target) continue;
    const status = error.status ? `${error.status}: ` : "";
    target.textContent = (target.textContent ? target.textContent + " " : "") + status + message;
    const box = target.closest(".field");
    if (box) {
      box.classList.add("invalid");
      const input = box.querySelector("input, select");
      if (input) input.setAttribute("aria-describedby", target.id);
    }
  }
}

export function fmt(value, digits = 6) {
  if (value === null || value === undefined) return "–";
  if (typeof value !== "number") return String(value);
  if (Number.isInteger(value)) return value.toLocaleString("en-US");
  return Number(value.toPrecision(digits)).toLocaleString("en-US", { maximumFractionDigits: 3 });
}

export const pct = (value) => (value === null || value === undefined ? "–" : `${value.toFixed(2)}%`);

export function saveBlob(blob, name) {
  const url = URL.createObjectURL(blob);
  const a = el("a", { href: url, download: name });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
}

// One colour per solver or route: well separated hues, readable on white.
export function colour(i, total = 10) {
  const golden = 137.508;
  const hue = (i * golden) % 360;
  const light = total > 12 ? 38 + (i % 3) * 8 : 42;
  return `hsl(${hue.toFixed(1)} 70% ${light}%)`;
}

export const SERIES_COLOURS = ["#1f6feb", "#d1242f", "#1a7f37", "#8250df", "#bf8700", "#0a7ea4",
  "#cf222e", "#6e7781"];

// Fill a checkbox list from /v1/solvers (or policies): unavailable ones disabled, their
// reason beside them.
export function checkboxList(container, items, { name, checked = () => false }) {
  container.replaceChildren();
  for (const item of items) {
    const id = `${container.id}-${item.name}`;
    const reason = item.available === false ? item.unavailable_reason || "unavailable here" : null;
    const box = el("input", { type: "checkbox", id, name, value: item.name, disabled: !!reason,
      checked: !reason && checked(item) });
    const label = el("label", { for: id, class: reason ? "off" : null,
      title: reason || item.description || "" }, box, ` ${item.name}`,
      item.kind ? el("small", { text: ` ${item.kind}` }) : null);
    const row = el("div", { class: "choice" }, label);
    if (reason) row.append(el("small", { class: "reason", text: reason }));
    container.append(row);
  }
}

export const checked = (container) =>
  [...container.querySelectorAll("input[type=checkbox]:checked")].map((b) => b.value);
