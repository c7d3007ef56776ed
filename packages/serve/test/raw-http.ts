// A raw HTTP/1.1 client over net.connect for tests that must bypass every client library's URL handling:
// the request line is sent byte for byte as written (percent-encodings, absolute-form, dot segments kept),
// which neither fetch nor fastify's inject allows. The response is parsed from the bytes read.
import * as net from "node:net";

/** A parsed raw response. */
export interface RawResponse {
  /** Status code from the status line (0 when the server closed without one). */
  readonly status: number;
  /** Header names lower-cased. */
  readonly headers: Readonly<Record<string, string>>;
  /** The body (de-chunked when chunked). */
  readonly body: string;
  /** Every byte received, as latin1. */
  readonly raw: string;
}

/** Parses one HTTP/1.1 response (status line, headers, content-length or chunked body). */
export function parseResponse(raw: string): RawResponse {
  const head = raw.indexOf("\r\n\r\n");
  if (head < 0) return { status: 0, headers: {}, body: "", raw };
  const lines = raw.slice(0, head).split("\r\n");
  const m = /^HTTP\/1\.[01] (\d{3})/.exec(lines[0]!);
  const headers: Record<string, string> = {};
  for (const l of lines.slice(1)) {
    const i = l.indexOf(":");
    headers[l.slice(0, i).trim().toLowerCase()] = l.slice(i + 1).trim();
  }
  let body = raw.slice(head + 4);
  if (headers["transfer-encoding"] === "chunked") {
    let out = "";
    for (let rest = body; ; ) {
      const nl = rest.indexOf("\r\n");
      const n = parseInt(rest.slice(0, nl), 16);
      if (!(n > 0)) break;
      out += rest.slice(nl + 2, nl + 2 + n);
      rest = rest.slice(nl + 2 + n + 2);
    }
    body = out;
  }
  return { status: m === null ? 0 : Number(m[1]), headers, body: Buffer.from(body, "latin1").toString("utf8"), raw };
}

/** Options of {@link rawRequest}. */
export interface RawRequestOptions {
  /** Extra header lines, e.g. `{ authorization: "Bearer k" }`. */
  readonly headers?: Readonly<Record<string, string>>;
  /** A JSON body (sent with content-type application/json and its content-length). */
  readonly json?: unknown;
  /** The Host header (default `localhost`). */
  readonly host?: string;
  /** Give up after this many ms (default 60 s). */
  readonly timeoutMs?: number;
}

/** Sends `METHOD TARGET HTTP/1.1` exactly as given to `url`'s host and port, with `Connection: close`. */
export function rawRequest(
  url: string,
  method: string,
  target: string,
  o: RawRequestOptions = {},
): Promise<RawResponse> {
  const { hostname, port } = new URL(url);
  const body = o.json === undefined ? "" : JSON.stringify(o.json);
  const headers: Record<string, string> = { host: o.host ?? "localhost", connection: "close", ...o.headers };
  if (o.json !== undefined)
    Object.assign(headers, { "content-type": "application/json", "content-length": String(Buffer.byteLength(body)) });
  const text = `${method} ${target} HTTP/1.1\r\n${Object.entries(headers)
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join("")}\r\n${body}`;
  return new Promise((resolve, reject) => {
    const sock = net.connect(Number(port), hostname.replace(/^\[|\]$/g, ""));
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => {
      sock.destroy();
      reject(new Error(`no response to ${method} ${target} in ${o.timeoutMs ?? 60_000} ms`));
    }, o.timeoutMs ?? 60_000);
    sock.on("data", (c: Buffer) => chunks.push(c));
    sock.on("error", (e) => {
      clearTimeout(timer);
      reject(e);
    });
    sock.on("close", () => {
      clearTimeout(timer);
      resolve(parseResponse(Buffer.concat(chunks).toString("latin1")));
    });
    sock.write(text);
  });
}
