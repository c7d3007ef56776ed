// Bad requests against a running server: each kind gets the right HTTP status and an OpenAI-shaped error
// ({error: {message, type, param, code}}), the official client maps them to its error classes, and the
// server keeps serving afterwards. The table below is the list of bad requests tried.
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
// @ts-expect-error: a plain ES module shared with the engine-worker tests (no declarations).
import { pacedEvalExecutor } from "./executors.mjs";
import {
  LLAMA3,
  LLAMA3_TEMPLATE,
  SKIP_NOTE,
  metric,
  startTestServer,
  waitFor,
  type TestServer,
} from "./server-helpers.js";

const KEY = "sk-test-key";
const CTX = 64;
const M = "llama3";
const ok = { model: M, prompt: "hi", max_tokens: 2 };
const chat = { model: M, messages: [{ role: "user", content: "hi" }], max_tokens: 2 };

interface Case {
  readonly name: string;
  readonly path?: string;
  readonly method?: string;
  readonly body?: string | object;
  readonly headers?: Record<string, string>;
  readonly status: number;
  readonly code: string;
  readonly param?: string | null;
}

/** The bad requests tried: what is sent, and the status, code and param it must get. */
const CASES: readonly Case[] = [
  { name: "malformed JSON", body: '{"model": "llama3", "prompt": ', status: 400, code: "invalid_request" },
  { name: "empty JSON body", body: "", status: 400, code: "invalid_request" },
  { name: "body is a JSON array", body: [1, 2], status: 400, code: "invalid_request", param: null },
  {
    name: "body is not JSON (text/plain)",
    body: "hello",
    headers: { "content-type": "text/plain" },
    status: 415,
    code: "unsupported_media_type",
  },
  { name: "model missing", body: { prompt: "hi" }, status: 400, code: "invalid_request", param: "model" },
  { name: "prompt missing", body: { model: M }, status: 400, code: "invalid_request", param: "prompt" },
  {
    name: "prompt of a wrong type",
    body: { model: M, prompt: { text: "hi" } },
    status: 400,
    code: "invalid_request",
    param: "prompt",
  },
  {
    name: "messages missing",
    path: "/v1/chat/completions",
    body: { model: M },
    status: 400,
    code: "invalid_request",
    param: "messages",
  },
  {
    name: "messages empty",
    path: "/v1/chat/completions",
    body: { ...chat, messages: [] },
    status: 400,
    code: "invalid_value",
    param: "messages",
  },
  {
    name: "unknown message role",
    path: "/v1/chat/completions",
    body: { ...chat, messages: [{ role: "wizard", content: "x" }] },
    status: 400,
    code: "invalid_value",
    param: "messages[0].role",
  },
  {
    name: "message content a number",
    path: "/v1/chat/completions",
    body: { ...chat, messages: [{ role: "user", content: 5 }] },
    status: 400,
    code: "invalid_request",
    param: "messages[0].content",
  },
  {
    name: "temperature a string",
    body: { ...ok, temperature: "0.5" },
    status: 400,
    code: "invalid_request",
    param: "temperature",
  },
  {
    name: "temperature above 2",
    body: { ...ok, temperature: 2.5 },
    status: 400,
    code: "invalid_value",
    param: "temperature",
  },
  { name: "top_p of 0", body: { ...ok, top_p: 0 }, status: 400, code: "invalid_value", param: "top_p" },
  { name: "max_tokens 0", body: { ...ok, max_tokens: 0 }, status: 400, code: "invalid_value", param: "max_tokens" },
  {
    name: "max_tokens not an integer",
    body: { ...ok, max_tokens: 1.5 },
    status: 400,
    code: "invalid_request",
    param: "max_tokens",
  },
  { name: "n above 16", body: { ...ok, n: 17 }, status: 400, code: "invalid_value", param: "n" },
  {
    name: "five stop strings",
    body: { ...ok, stop: ["a", "b", "c", "d", "e"] },
    status: 400,
    code: "invalid_value",
    param: "stop",
  },
  { name: "seed not an integer", body: { ...ok, seed: 1.25 }, status: 400, code: "invalid_request", param: "seed" },
  {
    name: "frequency_penalty out of range",
    body: { ...ok, frequency_penalty: 5 },
    status: 400,
    code: "invalid_value",
    param: "frequency_penalty",
  },
  { name: "stream a string", body: { ...ok, stream: "yes" }, status: 400, code: "invalid_request", param: "stream" },
  {
    name: "completions logprobs above 5",
    body: { ...ok, logprobs: 6 },
    status: 400,
    code: "invalid_value",
    param: "logprobs",
  },
  {
    name: "chat top_logprobs above 20",
    path: "/v1/chat/completions",
    body: { ...chat, logprobs: true, top_logprobs: 21 },
    status: 400,
    code: "invalid_value",
    param: "top_logprobs",
  },
  {
    name: "top_logprobs without logprobs",
    path: "/v1/chat/completions",
    body: { ...chat, top_logprobs: 2 },
    status: 400,
    code: "invalid_value",
    param: "top_logprobs",
  },
  {
    name: "logit_bias value above 100",
    body: { ...ok, logit_bias: { "5": 101 } },
    status: 400,
    code: "invalid_value",
    param: "logit_bias[5]",
  },
  {
    name: "response_format with an unsupported schema keyword",
    path: "/v1/chat/completions",
    body: {
      ...chat,
      response_format: { type: "json_schema", json_schema: { name: "x", schema: { type: "string", pattern: "a" } } },
    },
    status: 400,
    code: "invalid_value",
    param: "response_format.json_schema.schema",
  },
  {
    name: "token id outside the vocabulary",
    body: { ...ok, prompt: [1, 2, 99999] },
    status: 400,
    code: "invalid_value",
    param: "prompt",
  },
  {
    name: "prompt longer than the context",
    body: { ...ok, prompt: Array.from({ length: CTX + 5 }, () => 7), max_tokens: null },
    status: 400,
    code: "context_length_exceeded",
    param: "prompt",
  },
  {
    name: "prompt + max_tokens past the context",
    body: { ...ok, prompt: [5, 6, 7], max_tokens: CTX },
    status: 400,
    code: "context_length_exceeded",
    param: "max_tokens",
  },
  { name: "unknown model", body: { ...ok, model: "gpt-9" }, status: 404, code: "model_not_found", param: "model" },
  {
    name: "unknown model (chat)",
    path: "/v1/chat/completions",
    body: { ...chat, model: "gpt-9" },
    status: 404,
    code: "model_not_found",
    param: "model",
  },
  {
    name: "unknown model (GET /v1/models/:id)",
    path: "/v1/models/gpt-9",
    method: "GET",
    status: 404,
    code: "model_not_found",
    param: "model",
  },
  { name: "no such endpoint", path: "/v1/audio/speech", body: ok, status: 404, code: "not_found" },
  { name: "wrong method on an endpoint", path: "/v1/completions", method: "GET", status: 404, code: "not_found" },
  { name: "API key missing", body: ok, headers: { authorization: "" }, status: 401, code: "invalid_api_key" },
  {
    name: "API key wrong",
    body: ok,
    headers: { authorization: "Bearer sk-wrong" },
    status: 401,
    code: "invalid_api_key",
  },
  {
    name: "body over the size limit",
    body: { ...ok, prompt: "x".repeat(70_000) },
    status: 413,
    code: "request_too_large",
  },
];

describe.skipIf(LLAMA3 === null)(`bad requests${SKIP_NOTE}`, { timeout: 180_000 }, () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer(LLAMA3!, {
      context: CTX,
      chatTemplate: LLAMA3_TEMPLATE,
      apiKey: KEY,
      maxBatch: 1,
      maxQueue: 1,
      bodyLimit: 64 * 1024,
      // Paced steps: a streamed generation is still running while the queue tests act on it.
      executor: () => pacedEvalExecutor(15),
    });
  }, 180_000);
  afterAll(async () => s?.close(), 60_000);

  test(`the table has at least 20 kinds (${CASES.length})`, () => {
    expect(new Set(CASES.map((c) => c.name)).size).toBe(CASES.length);
    expect(CASES.length).toBeGreaterThanOrEqual(20);
  });

  test.each(CASES)("$name -> $status $code", async (c) => {
    const headers: Record<string, string> = {
      authorization: `Bearer ${KEY}`,
      "content-type": "application/json",
      ...c.headers,
    };
    if (headers.authorization === "") delete headers.authorization;
    const method = c.method ?? "POST";
    const body = method === "GET" ? undefined : typeof c.body === "string" ? c.body : JSON.stringify(c.body);
    const res = await fetch(`${s.url}${c.path ?? "/v1/completions"}`, {
      method,
      headers,
      ...(body === undefined ? {} : { body }),
    });
    const json = (await res.json()) as { error: { message: unknown; type: unknown; param: unknown; code: unknown } };
    expect(res.status).toBe(c.status);
    expect(Object.keys(json)).toEqual(["error"]);
    expect(typeof json.error.message).toBe("string");
    expect((json.error.message as string).length).toBeGreaterThan(5);
    expect(json.error.code).toBe(c.code);
    expect(json.error.type).toBe(
      c.status === 401
        ? "authentication_error"
        : c.status === 429
          ? "rate_limit_error"
          : c.status >= 500
            ? "server_error"
            : "invalid_request_error",
    );
    if (c.param !== undefined) expect(json.error.param).toBe(c.param);
    else expect(json.error.param === null || typeof json.error.param === "string").toBe(true);
  });

  test("the openai client raises its own error classes with the status and code", async () => {
    const bad = new OpenAI({ baseURL: `${s.url}/v1`, apiKey: "sk-wrong", maxRetries: 0 });
    await expect(bad.models.list()).rejects.toMatchObject({ status: 401, code: "invalid_api_key" });
    await expect(bad.models.list()).rejects.toBeInstanceOf(OpenAI.AuthenticationError);
    await expect(s.client.completions.create({ model: "gpt-9", prompt: "x" })).rejects.toBeInstanceOf(
      OpenAI.NotFoundError,
    );
    await expect(s.client.completions.create({ model: M, prompt: "x", temperature: 9 })).rejects.toBeInstanceOf(
      OpenAI.BadRequestError,
    );
    // With the key, the same client works; /health and /metrics need no key.
    const r = await s.client.completions.create({ model: M, prompt: "x", max_tokens: 2, ignore_eos: true } as never);
    expect(r.usage!.completion_tokens).toBe(2);
    expect((await fetch(`${s.url}/health`)).status).toBe(200);
    expect((await fetch(`${s.url}/metrics`)).status).toBe(200);
  });

  test("a full queue answers 429 (rate_limit_error) with a clear message; the waiting request still completes", async () => {
    // max batch 1, max queue 1: A runs, B waits, C is refused.
    const abortA = new AbortController();
    const a = s.client.completions.create(
      { model: M, prompt: "a", max_tokens: 40, ignore_eos: true, stream: true } as never,
      { signal: abortA.signal },
    );
    const streamA = (await a) as unknown as AsyncIterable<unknown>;
    const itA = streamA[Symbol.asyncIterator]();
    await itA.next();
    const b = s.client.completions.create({ model: M, prompt: "b", max_tokens: 2, ignore_eos: true } as never);
    await waitFor(async () => (await metric(s.url, "poot_queue_depth")) === 1);
    const c = s.client.completions.create({ model: M, prompt: "c", max_tokens: 2 });
    await expect(c).rejects.toBeInstanceOf(OpenAI.RateLimitError);
    await expect(c).rejects.toMatchObject({ status: 429, code: "server_busy" });
    abortA.abort();
    const rb = (await b) as unknown as { usage: { completion_tokens: number } };
    expect(rb.usage.completion_tokens).toBe(2);
    await waitFor(async () => (await metric(s.url, "poot_engine_open_sequences")) === 0);
  });

  test("after every bad request the server still serves, and /metrics counted the statuses", async () => {
    const r = await s.client.chat.completions.create({
      model: M,
      messages: [{ role: "user", content: "still there?" }],
      max_tokens: 3,
    });
    expect(r.choices.length).toBe(1);
    expect(
      await metric(s.url, "poot_requests_total", { endpoint: "/v1/completions", status: "400" }),
    ).toBeGreaterThanOrEqual(20);
    expect(await metric(s.url, "poot_requests_total", { endpoint: "/v1/completions", status: "429" })).toBe(1);
    await waitFor(
      async () =>
        (await metric(s.url, "poot_requests_total", { endpoint: "/v1/chat/completions", status: "200" })) === 1,
      10_000,
    );
  });
});
