// Server-sent events read from a fetch() response. An EventSource cannot send headers, so with
// an API key the console could only poll a job; fetch() sends the key and its body is read
// here as the event-stream format says (fields per line, an event per blank line).

// Turns the text of a stream, in whatever chunks it arrives, into events {type, data, id}.
export class EventParser {
  constructor() {
    this.rest = "";
    this.reset();
  }

  reset() {
    this.type = "";
    this.data = [];
    this.id = null;
  }

  // The events completed by `text` (a chunk may end mid-line, even between \r and \n).
  push(text) {
    const events = [];
    this.rest += text;
    for (;;) {
      const end = this.rest.search(/\r\n|\r|\n/);
      // a lone \r at the very end may be the first half of \r\n: wait for the next chunk
      if (end < 0 || (end === this.rest.length - 1 && this.rest[end] === "\r")) break;
      const line = this.rest.slice(0, end);
      this.rest = this.rest.slice(end + (this.rest.startsWith("\r\n", end) ? 2 : 1));
      const event = this.line(line);
      if (event) events.push(event);
    }
    return events;
  }

  line(line) {
    if (line === "") {
      const event = this.data.length
        ? { type: this.type || "message", data: this.data.join("\n"), id: this.id }
        : null;
      this.reset();
      return event;
    }
    if (line.startsWith(":")) return null; // a comment (the server's keep-alive)
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "event") this.type = value;
    else if (field === "data") this.data.push(value);
    else if (field === "id") this.id = value;
    return null;
  }
}

// Reads `response`'s body to its end, calling onEvent(event) for each event; returns when
// the stream ends (or throws when the connection drops or `signal` aborts it).
export async function readEvents(response, onEvent) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  const parser = new EventParser();
  for (;;) {
    const { done, value } = await reader.read();
    const text = done ? decoder.decode() : decoder.decode(value, { stream: true });
    for (const event of parser.push(text)) {
      if (onEvent(event) === false) {
        reader.cancel().catch(() => {});
        return;
      }
    }
    if (done) return;
  }
}
