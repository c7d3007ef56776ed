// Socket hygiene (issue #20), through real sockets on the demo model: slow headers and slow bodies time out
// (408, socket closed), the connection cap closes sockets past it, idle keep-alive sockets close and a socket
// serves at most maxRequestsPerSocket requests; Host checks refuse names other than the allowed ones (DNS
// rebinding), including an absolute-form target's authority; --cors answers preflights for its origin only.
import * as net from "node:net";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { parseResponse, rawRequest } from "./raw-http.js";
import { DEMO, startTestServer, type TestServer } from "./server-helpers.js";

const LIMITS = {
  headersTimeoutMs: 600,
  requestTimeoutMs: 1200,
  keepAliveTimeoutMs: 400,
  maxRequestsPerSocket: 2,
  maxConnections: 4,
};

/** Opens a socket to `url`; resolves once connected, with what it has received and whether the server closed it. */
async function open(
  url: string,
): Promise<{ sock: net.Socket; data: () => string; closed: () => boolean; ended: Promise<void> }> {
  const { port } = new URL(url);
  const sock = net.connect(Number(port), "127.0.0.1");
  let data = "",
    closed = false;
  sock.on("data", (c: Buffer) => (data += c.toString("latin1")));
  sock.on("error", () => undefined);
  const ended = new Promise<void>((r) =>
    sock.on("close", () => {
      closed = true;
      r();
    }),
  );
  await new Promise<void>((r, j) => {
    sock.once("connect", () => r());
    sock.once("error", j);
  });
  return { sock, data: () => data, closed: () => closed, ended };
}

const within = <T>(p: Promise<T>, ms: number): Promise<T | "timeout"> =>
  Promise.race([p, new Promise<"timeout">((r) => setTimeout(() => r("timeout"), ms))]);

describe("socket limits", { timeout: 120_000 }, () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer(DEMO, { context: 64, maxBatch: 1, limits: LIMITS });
  }, 120_000);
  afterAll(async () => s?.close());

  test("headers that never finish: 408 and closed after the header timeout", async () => {
    const c = await open(s.url);
    c.sock.write("GET /health HTTP/1.1\r\nHost: localhost\r\nX-Slow: ");
    expect(await within(c.ended, 10_000)).not.toBe("timeout");
    expect(parseResponse(c.data()).status).toBe(408);
  });

  test("a body that never finishes: 408 and closed after the request timeout", async () => {
    const c = await open(s.url);
    c.sock.write(
      'POST /v1/completions HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"model":',
    );
    const t0 = performance.now();
    expect(await within(c.ended, 10_000)).not.toBe("timeout");
    expect(performance.now() - t0).toBeGreaterThan(LIMITS.requestTimeoutMs / 2);
    expect(parseResponse(c.data()).status).toBe(408);
  });

  test("an idle keep-alive socket is closed after the keep-alive timeout; a socket serves at most 2 requests", async () => {
    const c = await open(s.url);
    c.sock.write("GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n");
    await new Promise((r) => setTimeout(r, 100));
    expect(parseResponse(c.data()).status).toBe(200);
    expect(await within(c.ended, 10_000)).not.toBe("timeout");
    const d = await open(s.url);
    d.sock.write("GET /health HTTP/1.1\r\nHost: localhost\r\n\r\nGET /health HTTP/1.1\r\nHost: localhost\r\n\r\n");
    expect(await within(d.ended, 10_000)).not.toBe("timeout");
    const second = d.data().slice(d.data().indexOf("HTTP/1.1", 5));
    expect(parseResponse(second).headers.connection).toBe("close");
  });

  test("past 4 open sockets a new one is closed without an answer; when one goes, a new one is served", async () => {
    const held = await Promise.all([0, 1, 2, 3].map(() => open(s.url)));
    // Let the server account for them.
    await new Promise((r) => setTimeout(r, 100));
    const extra = await open(s.url);
    extra.sock.write("GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n");
    expect(await within(extra.ended, 5000)).not.toBe("timeout");
    expect(parseResponse(extra.data()).status).toBe(0);
    held[0]!.sock.destroy();
    await new Promise((r) => setTimeout(r, 100));
    expect((await rawRequest(s.url, "GET", "/health")).status).toBe(200);
    for (const h of held) h.sock.destroy();
  });
});

describe("Host checks", { timeout: 120_000 }, () => {
  let s: TestServer;
  let named: TestServer;
  beforeAll(async () => {
    s = await startTestServer(DEMO, { context: 64, maxBatch: 1 });
    named = await startTestServer(DEMO, { context: 64, maxBatch: 1, allowedHosts: ["api.example"] });
  }, 120_000);
  afterAll(async () => {
    await s?.close();
    await named?.close();
  });

  test("bound to loopback: loopback names answer, any other Host is 421 host_not_allowed (DNS rebinding)", async () => {
    for (const host of ["localhost", "LOCALHOST:8080", "127.0.0.1", "127.0.0.1:1", "[::1]:8080"]) {
      expect((await rawRequest(s.url, "GET", "/v1/models", { host })).status).toBe(200);
    }
    for (const host of ["evil.example", "evil.example:8080", "localhost.evil.example", "127.0.0.1.nip.io", "[::2]"]) {
      const r = await rawRequest(s.url, "GET", "/health", { host });
      expect(r.status).toBe(421);
      expect(JSON.parse(r.body).error.code).toBe("host_not_allowed");
    }
    // The absolute-form target's authority counts too (RFC 9112 §3.2.2), whatever the Host header says.
    expect((await rawRequest(s.url, "GET", "http://evil.example/v1/models", { host: "localhost" })).status).toBe(421);
    expect((await rawRequest(s.url, "GET", "http://localhost/v1/models", { host: "localhost" })).status).toBe(200);
  });

  test("planted violation: under the default limits (10 s) the slow-header socket above is still open after 1.5 s", async () => {
    const c = await open(s.url);
    c.sock.write("GET /health HTTP/1.1\r\nHost: localhost\r\nX-Slow: ");
    expect(await within(c.ended, 1500)).toBe("timeout");
    c.sock.destroy();
  });

  test("allowedHosts replaces the default: only api.example answers", async () => {
    expect((await rawRequest(named.url, "GET", "/health", { host: "api.example:443" })).status).toBe(200);
    expect((await rawRequest(named.url, "GET", "/health", { host: "localhost" })).status).toBe(421);
  });
});

describe("--cors", { timeout: 120_000 }, () => {
  let s: TestServer;
  let plain: TestServer;
  const ORIGIN = "http://app.example";
  beforeAll(async () => {
    s = await startTestServer(DEMO, { context: 64, maxBatch: 1, cors: ORIGIN, apiKey: "sk-cors" });
    plain = await startTestServer(DEMO, { context: 64, maxBatch: 1 });
  }, 120_000);
  afterAll(async () => {
    await s?.close();
    await plain?.close();
  });

  test("a preflight from the origin is answered (no key needed) with the methods and headers allowed", async () => {
    const r = await rawRequest(s.url, "OPTIONS", "/v1/chat/completions", {
      headers: {
        origin: ORIGIN,
        "access-control-request-method": "POST",
        "access-control-request-headers": "authorization, content-type",
      },
    });
    expect(r.status).toBe(204);
    expect(r.headers["access-control-allow-origin"]).toBe(ORIGIN);
    expect(r.headers["access-control-allow-headers"]).toContain("authorization");
    expect(r.headers["access-control-allow-methods"]).toContain("POST");
  });

  test("responses to the origin carry Allow-Origin; another origin's do not; without --cors nobody's do", async () => {
    const ok = await rawRequest(s.url, "GET", "/v1/models", {
      headers: { origin: ORIGIN, authorization: "Bearer sk-cors" },
    });
    expect(ok.status).toBe(200);
    expect(ok.headers["access-control-allow-origin"]).toBe(ORIGIN);
    // The header names the one allowed origin, so a browser on another origin refuses the response.
    const other = await rawRequest(s.url, "GET", "/v1/models", {
      headers: { origin: "http://evil.example", authorization: "Bearer sk-cors" },
    });
    expect(other.headers["access-control-allow-origin"]).not.toBe("http://evil.example");
    // The key still applies to real requests from the allowed origin.
    expect((await rawRequest(s.url, "GET", "/v1/models", { headers: { origin: ORIGIN } })).status).toBe(401);
    const none = await rawRequest(plain.url, "GET", "/v1/models", { headers: { origin: ORIGIN } });
    expect(none.headers["access-control-allow-origin"]).toBeUndefined();
  });
});
