// The API key cannot be bypassed (issue #20): every spelling of a protected route that the router serves,
// sent as a raw request line over a real socket (no client library normalizes it first), is 401 without the
// key and 200 with it; /health (and /metrics unless metricsAuth) stay open. The planted violation: the
// pre-#20 check (a raw-URL prefix test) run against the same table lets requests through without a key.
import Fastify, { type FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { rawRequest } from "./raw-http.js";
import { DEMO, startTestServer, type TestServer } from "./server-helpers.js";

const KEY = "sk-auth-test-0123456789";
const completion = { model: "demo", prompt: "hi", max_tokens: 1, temperature: 0 };
const chat = { model: "demo", messages: [{ role: "user", content: "hi" }], max_tokens: 1, temperature: 0 };

interface Variant {
  readonly method: "GET" | "POST";
  readonly target: string;
  readonly json?: unknown;
}

/** Spellings of the protected routes: percent-encoded, absolute-form, double slash, dot segments, case. */
const VARIANTS: readonly Variant[] = [
  { method: "GET", target: "/v1/models" },
  { method: "POST", target: "/v1/completions", json: completion },
  { method: "POST", target: "/v1/chat/completions", json: chat },
  { method: "POST", target: "/%761/completions", json: completion },
  { method: "POST", target: "/%76%31/chat/completions", json: chat },
  { method: "GET", target: "/v%31/models" },
  { method: "GET", target: "/v1/mod%65ls" },
  { method: "GET", target: "/%56%31/models" },
  { method: "GET", target: "http://localhost/v1/models" },
  { method: "GET", target: "HTTP://LOCALHOST:1/v1/models" },
  { method: "POST", target: "http://localhost/v1/completions", json: completion },
  { method: "GET", target: "//v1/models" },
  { method: "GET", target: "/v1//models" },
  { method: "POST", target: "//v1//chat//completions", json: chat },
  { method: "GET", target: "/v1/./models" },
  { method: "GET", target: "/x/../v1/models" },
  { method: "GET", target: "/v1/%2e/models" },
  { method: "GET", target: "/x/%2e%2e/v1/models" },
  { method: "POST", target: "/./v1/completions", json: completion },
  { method: "GET", target: "/V1/MODELS" },
  { method: "GET", target: "/V1/Models" },
  { method: "POST", target: "/V1/COMPLETIONS", json: completion },
  { method: "GET", target: "/v1/models?x=1" },
  { method: "GET", target: "/v1/models/demo" },
  { method: "GET", target: "/v1/models/%64emo" },
];

/** Each variant's status without a key, with a wrong key, and with the right one. */
async function statuses(url: string, v: Variant): Promise<{ none: number; wrong: number; right: number }> {
  const send = (headers: Record<string, string>): Promise<number> =>
    rawRequest(url, v.method, v.target, { headers, ...(v.json === undefined ? {} : { json: v.json }) }).then(
      (r) => r.status,
    );
  return {
    none: await send({}),
    wrong: await send({ authorization: "Bearer sk-wrong" }),
    right: await send({ authorization: `Bearer ${KEY}` }),
  };
}

describe("API key on the routed path, through a real socket", { timeout: 300_000 }, () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer(DEMO, { context: 64, apiKey: KEY, maxBatch: 2 });
  }, 120_000);
  afterAll(async () => s?.close());

  test.each(VARIANTS)("$method $target: 401 without the key or with a wrong one, 200 with it", async (v) => {
    expect(await statuses(s.url, v)).toEqual({ none: 401, wrong: 401, right: 200 });
  });

  test("the 401 is OpenAI-shaped; the Bearer scheme is case-insensitive; a bare key is not a Bearer credential", async () => {
    const r = await rawRequest(s.url, "GET", "/%76%31/models");
    expect(JSON.parse(r.body)).toMatchObject({ error: { type: "authentication_error", code: "invalid_api_key" } });
    expect((await rawRequest(s.url, "GET", "/v1/models", { headers: { authorization: `bearer ${KEY}` } })).status).toBe(
      200,
    );
    expect((await rawRequest(s.url, "GET", "/v1/models", { headers: { authorization: KEY } })).status).toBe(401);
    expect(
      (await rawRequest(s.url, "GET", "/v1/models", { headers: { authorization: `Bearer ${KEY}x` } })).status,
    ).toBe(401);
    expect(
      (await rawRequest(s.url, "GET", "/v1/models", { headers: { authorization: `Bearer ${KEY.slice(0, -1)}` } }))
        .status,
    ).toBe(401);
  });

  test("the issue's literal absolute-form `GET http://x/v1/models` is refused before auth: x is not a loopback name (421)", async () => {
    expect((await rawRequest(s.url, "GET", "http://x/v1/models")).status).toBe(421);
  });

  test("unknown paths need the key too (401 without, 404 with): they reveal nothing to a client without one", async () => {
    for (const target of ["/v1/embeddings", "/admin", "/%2e%2e/etc/passwd", "*"]) {
      expect((await rawRequest(s.url, "GET", target)).status).toBe(401);
      expect((await rawRequest(s.url, "GET", target, { headers: { authorization: `Bearer ${KEY}` } })).status).toBe(
        404,
      );
    }
  });

  test("/health and /metrics stay open, in any spelling", async () => {
    for (const target of ["/health", "/%68ealth", "http://localhost/health", "/HEALTH", "/metrics", "/%6detrics"]) {
      expect((await rawRequest(s.url, "GET", target)).status).toBe(200);
    }
  });

  test("the official client with the key works", async () => {
    const page = await s.client.models.list();
    expect(page.data.map((m) => m.id)).toEqual(["demo"]);
  });
});

describe("metricsAuth puts /metrics behind the key", { timeout: 300_000 }, () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer(DEMO, { context: 64, apiKey: KEY, maxBatch: 1, metricsAuth: true });
  }, 120_000);
  afterAll(async () => s?.close());

  test("/metrics (and /%6detrics) 401 without the key, 200 with it; /health still open", async () => {
    for (const target of ["/metrics", "/%6detrics", "/METRICS"]) {
      expect((await rawRequest(s.url, "GET", target)).status).toBe(401);
      expect((await rawRequest(s.url, "GET", target, { headers: { authorization: `Bearer ${KEY}` } })).status).toBe(
        200,
      );
    }
    expect((await rawRequest(s.url, "GET", "/health")).status).toBe(200);
  });
});

describe("planted violation: the pre-#20 raw-URL check fails this table", () => {
  let app: FastifyInstance;
  let url: string;
  beforeAll(async () => {
    // The old hook, verbatim in spirit: a prefix test on the raw request target, before the router decodes it.
    app = Fastify();
    app.addHook("onRequest", async (req, reply) => {
      if (!req.url.startsWith("/v1/")) return;
      if (req.headers.authorization !== `Bearer ${KEY}`) await reply.code(401).send({ error: "no key" });
    });
    app.get("/v1/models", async () => ({ data: [] }));
    app.post("/v1/completions", async () => ({ choices: [] }));
    app.post("/v1/chat/completions", async () => ({ choices: [] }));
    app.get("/v1/models/:id", async () => ({ id: "demo" }));
    await app.listen({ host: "127.0.0.1", port: 0 });
    const addr = app.server.address();
    url = `http://127.0.0.1:${typeof addr === "object" && addr !== null ? addr.port : 0}`;
  });
  afterAll(async () => app?.close());

  test("the issue's four bypasses answer 200 without a key there, so the table above would catch a regression", async () => {
    const bypassed: string[] = [];
    for (const v of VARIANTS) if ((await statuses(url, v)).none === 200) bypassed.push(v.target);
    for (const t of ["/%761/completions", "/%76%31/chat/completions", "/v%31/models", "http://localhost/v1/models"])
      expect(bypassed).toContain(t);
  });
});
