// Several models in one server (decision 2705), started as `poot serve --config` starts it (engine worker threads,
// eval backend): the llama3 and qwen3 fixtures, each answering the official clients with its own transformers greedy
// ids (reference.json, the oracle); a budget that fits one model at a time unloads and reloads them with the same
// answers; a model held by a request is never unloaded under it (the next load waits, or gets a 503 with
// Retry-After); /health answers while a slow model loads on its worker. Planted: ids swapped in the config (requests
// routed to the wrong model) fail the reference check.
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import Anthropic from "@anthropic-ai/sdk";
import { createEvalExecutor } from "@poot/backend-reference";
import { LoadedModel, Tokenizer } from "@poot/models";
import { CliError, startServe, type ServeCliOptions, type StartedServer } from "@poot/serve";
import { fixture, needFixture } from "@poot/testkit";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { rawRequest } from "./raw-http.js";
import { LLAMA3_TEMPLATE, TEST_EXECUTORS, metric } from "./server-helpers.js";

const MISSING = needFixture("hf/llama3") ?? needFixture("hf/qwen3");
const NOTE = MISSING === undefined ? "" : ` (skipped: ${MISSING})`;
const FAMILIES = ["llama3", "qwen3"] as const;
type Family = (typeof FAMILIES)[number];
const dirOf = (f: Family): string => fixture(`hf/${f}`);
const refOf = (f: Family): { prompt_ids: number[]; greedy_ids: number[] } =>
  JSON.parse(fs.readFileSync(path.join(dirOf(f), "reference.json"), "utf8")) as never;
const silent = { out: () => {}, err: () => {} };
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "poot-multi-"));
const templateFile = path.join(tmp, "llama3.jinja");
fs.writeFileSync(templateFile, LLAMA3_TEMPLATE);

/** `poot serve` options as commander would give them, eval backend, engine workers, port 0. */
function flags(extra: Partial<ServeCliOptions> = {}): ServeCliOptions {
  return {
    backend: "eval",
    host: "127.0.0.1",
    port: "0",
    maxBatch: "2",
    maxQueue: "16",
    ctx: "64",
    weights: "bf16",
    prepare: false,
    engineNice: "0",
    ...extra,
  };
}

/** Writes a config file of the two fixtures (ids as given) and returns its path. */
function config(ids: Record<Family, string>, extra: object = {}): string {
  const file = path.join(tmp, `serve-${Math.random().toString(36).slice(2)}.json`);
  const models = FAMILIES.map((f) => ({ path: dirOf(f), id: ids[f], "chat-template": templateFile }));
  fs.writeFileSync(file, JSON.stringify({ models, ...extra }));
  return file;
}

const start = (o: Partial<ServeCliOptions>, exportName?: string): Promise<StartedServer> =>
  startServe([], flags(o), silent, () => createEvalExecutor(), ["eval"], {
    url: TEST_EXECUTORS,
    ...(exportName === undefined ? {} : { name: exportName }),
  });

/** The openai client's token strings of a greedy completion of the fixture prompt by `model`. */
async function greedyTokens(client: OpenAI, model: string, f: Family): Promise<string[]> {
  const r = await client.completions.create({
    model,
    prompt: refOf(f).prompt_ids,
    max_tokens: 16,
    temperature: 0,
    logprobs: 0,
    ignore_eos: true,
  } as never);
  return r.choices[0]!.logprobs!.tokens!;
}

/** The reference check: the token strings are those of transformers' greedy ids for family `f`. */
function matchesReference(tokens: readonly string[], f: Family): boolean {
  const tok = new Tokenizer(JSON.parse(fs.readFileSync(path.join(dirOf(f), "tokenizer.json"), "utf8")), {});
  const want = refOf(f).greedy_ids.map((id) => tok.decode([id]));
  return tokens.length === want.length && tokens.every((t, i) => t === want[i]);
}

const clientOf = (url: string): OpenAI => new OpenAI({ baseURL: `${url}/v1`, apiKey: "x", maxRetries: 0 });

describe.skipIf(MISSING !== undefined)(`two fixture models in one server${NOTE}`, { timeout: 300_000 }, () => {
  let s: StartedServer;
  let client: OpenAI;
  beforeAll(async () => {
    s = await start({ config: config({ llama3: "llama3", qwen3: "qwen3" }) });
    client = clientOf(s.url);
  }, 120_000);
  afterAll(async () => s?.close());

  test("/v1/models lists both before any load; each answers with its own reference greedy ids", async () => {
    const listed = (await client.models.list()).data as unknown as { id: string; loaded: boolean }[];
    expect(listed.map((m) => [m.id, m.loaded])).toEqual([
      ["llama3", false],
      ["qwen3", false],
    ]);
    for (const f of FAMILIES) expect(matchesReference(await greedyTokens(client, f, f), f)).toBe(true);
    const after = (await client.models.list()).data as unknown as { loaded: boolean }[];
    expect(after.map((m) => m.loaded)).toEqual([true, true]);
    expect(await metric(s.url, "poot_model_loads_total", { model: "qwen3" })).toBe(1);
    // The existing names still count every request, whatever the model.
    expect(await metric(s.url, "poot_generations_total", { reason: "length" })).toBeGreaterThanOrEqual(2);
  });

  test("chat, /v1/messages and count_tokens (Anthropic SDK), /tokenize and embeddings route by model: each chat equals its model's greedy loop", async () => {
    const anthropic = new Anthropic({ baseURL: s.url, apiKey: "x", maxRetries: 0 });
    const tok = new Tokenizer(
      JSON.parse(fs.readFileSync(path.join(dirOf("llama3"), "tokenizer.json"), "utf8")),
      {},
      {
        chatTemplate: LLAMA3_TEMPLATE,
      },
    );
    const messages = [{ role: "user" as const, content: "Hello there" }];
    const ids = tok.encode(tok.applyChatTemplate(messages), { addSpecial: false });
    for (const f of FAMILIES) {
      // The oracle: @poot/models' own greedy loop over the fixture (not the runtime, not the server).
      const m = LoadedModel.open(dirOf(f), { weights: "bf16" });
      const eos = m.config.eosTokenIds;
      const all = m.generate(ids, 8, eos).ids;
      m.close();
      const g = eos.includes(all[all.length - 1]!) ? all.slice(0, -1) : all;
      const want = tok.decode(g, { skipSpecial: true });
      const chat = await client.chat.completions.create({ model: f, messages, max_tokens: 8, temperature: 0 });
      expect(chat.model).toBe(f);
      expect(chat.choices[0]!.message.content).toBe(want);
      const msg = (await anthropic.messages.create({
        model: f,
        max_tokens: 8,
        temperature: 0,
        messages,
      } as never)) as Anthropic.Message;
      expect(msg.model).toBe(f);
      expect(msg.content[0]).toEqual({ type: "text", text: want });
      const t = await rawRequest(s.url, "POST", "/tokenize", { json: { model: f, content: "Hello there" } });
      expect((JSON.parse(t.body) as { tokens: number[] }).tokens).toEqual(tok.encode("Hello there"));
      const count = await anthropic.messages.countTokens({ model: f, messages });
      expect(count.input_tokens).toBe(ids.length);
    }
    // Embeddings route too: the same input through the two models' different weights.
    const [a, b] = await Promise.all(FAMILIES.map((f) => client.embeddings.create({ model: f, input: "Hello there" })));
    expect([a!.model, b!.model]).toEqual([...FAMILIES]);
    expect(a!.data[0]!.embedding).toHaveLength(64);
    expect(a!.data[0]!.embedding).not.toEqual(b!.data[0]!.embedding);
  });

  test("bad input: an unknown model is a 404 model_not_found naming it and the served ids; /tokenize needs model", async () => {
    const err = await client.completions.create({ model: "gpt-4", prompt: "hi", max_tokens: 1 }).catch((e) => e);
    expect(err).toBeInstanceOf(OpenAI.NotFoundError);
    expect(err.code).toBe("model_not_found");
    expect(err.message).toContain("The model 'gpt-4' does not exist: this server serves 'llama3', 'qwen3'");
    const msg = await new Anthropic({ baseURL: s.url, apiKey: "x", maxRetries: 0 }).messages
      .create({ model: "claude", max_tokens: 4, messages: [{ role: "user", content: "hi" }] })
      .catch((e) => e);
    expect(msg).toBeInstanceOf(Anthropic.NotFoundError);
    expect(msg.message).toContain("The model 'claude' does not exist");
    const t = await rawRequest(s.url, "POST", "/tokenize", { json: { content: "hi" } });
    expect(t.status).toBe(400);
    expect((JSON.parse(t.body) as { error: { message: string } }).error.message).toBe(
      "model is required: this server serves 'llama3', 'qwen3'",
    );
  });

  test("planted violation: ids swapped in the config (routing to the wrong model) fail the reference check", async () => {
    const swapped = await start({ config: config({ llama3: "qwen3", qwen3: "llama3" }) });
    try {
      const tokens = await greedyTokens(clientOf(swapped.url), "llama3", "llama3");
      expect(matchesReference(tokens, "llama3")).toBe(false);
      expect(matchesReference(tokens, "qwen3")).toBe(true);
    } finally {
      await swapped.close();
    }
  });
});

describe.skipIf(MISSING !== undefined)(`a memory budget of one model at a time${NOTE}`, { timeout: 300_000 }, () => {
  let s: StartedServer;
  let client: OpenAI;
  // Each model is charged its weight file: one and a half files hold one model, never both.
  const size = Math.max(...FAMILIES.map((f) => fs.statSync(path.join(dirOf(f), "model.bf16.safetensors")).size));
  beforeAll(async () => {
    s = await start({
      config: config({ llama3: "llama3", qwen3: "qwen3" }),
      modelsMemory: String(Math.floor(size * 1.5)),
      queueTimeout: "3",
    });
    client = clientOf(s.url);
  }, 120_000);
  afterAll(async () => s?.close());

  test("alternating requests unload and reload (LRU); every answer is its model's reference", async () => {
    for (const f of ["llama3", "qwen3", "llama3", "qwen3"] as const) {
      expect(matchesReference(await greedyTokens(client, f, f), f)).toBe(true);
      expect(s.server.models.loaded.map((m) => m.id)).toEqual([f]);
    }
    expect(await metric(s.url, "poot_model_loads_total", { model: "llama3" })).toBe(2);
    expect(await metric(s.url, "poot_model_unloads_total", { model: "llama3" })).toBe(2);
    expect(await metric(s.url, "poot_model_loaded", { model: "qwen3" })).toBe(1);
    expect(await metric(s.url, "poot_model_loaded", { model: "llama3" })).toBe(0);
    expect(await metric(s.url, "poot_model_load_seconds_count", { model: "qwen3" })).toBe(2);
  });

  test("a streaming request holds its model: the other model's load waits for its end; both answers are references", async () => {
    const stream = (await client.completions.create({
      model: "llama3",
      prompt: refOf("llama3").prompt_ids,
      max_tokens: 16,
      temperature: 0,
      logprobs: 0,
      ignore_eos: true,
      stream: true,
    } as never)) as unknown as AsyncIterable<OpenAI.Completion>;
    const tokens: string[] = [];
    let other: Promise<string[]> | null = null;
    for await (const chunk of stream) {
      tokens.push(...(chunk.choices[0]?.logprobs?.tokens ?? []));
      // Asked while llama3 streams: loading qwen3 needs llama3 unloaded, which must wait for this stream's end.
      other ??= greedyTokens(client, "qwen3", "qwen3");
    }
    // An unload under the stream would have cut it short.
    expect(matchesReference(tokens, "llama3")).toBe(true);
    expect(matchesReference(await other!, "qwen3")).toBe(true);
    expect(s.server.models.loaded.map((m) => m.id)).toEqual(["qwen3"]);
  });

  test("a model held by a request is not unloaded: another model's request gets a 503 with Retry-After", async () => {
    const lease = await s.server.models.acquire("llama3");
    try {
      const err = await client.completions.create({ model: "qwen3", prompt: "hi", max_tokens: 1 }).catch((e) => e);
      expect(err).toBeInstanceOf(OpenAI.APIError);
      expect(err.status).toBe(503);
      expect(err.code).toBe("model_busy");
      expect(err.message).toContain("held by models serving requests ('llama3')");
      expect(Number(err.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
      expect(s.server.models.loaded.map((m) => m.id)).toEqual(["llama3"]);
      // Waiting within the queue timeout: the load goes ahead once the holder ends.
      const later = greedyTokens(client, "qwen3", "qwen3");
      await new Promise((r) => setTimeout(r, 300));
      expect(s.server.models.isLoaded("qwen3")).toBe(false);
      lease.release();
      expect(matchesReference(await later, "qwen3")).toBe(true);
    } finally {
      lease.release();
    }
  });
});

describe.skipIf(MISSING !== undefined)(`loading off the event loop${NOTE}`, { timeout: 300_000 }, () => {
  /**
   * The longest gap between consecutive /health answers (polled every 10 ms) while the first request to llama3 loads
   * it (1.5 s of executor start-up): a stall anywhere on the event loop, in a request or between two, shows in it.
   */
  async function healthDuringLoad(s: StartedServer): Promise<{ worst: number; loadMs: number }> {
    const answered: number[] = [];
    let on = true;
    const poll = (async () => {
      while (on) {
        expect((await rawRequest(s.url, "GET", "/health")).status).toBe(200);
        answered.push(performance.now());
        await new Promise((r) => setTimeout(r, 10));
      }
    })();
    await new Promise((r) => setTimeout(r, 50));
    const t0 = performance.now();
    expect(matchesReference(await greedyTokens(clientOf(s.url), "llama3", "llama3"), "llama3")).toBe(true);
    const loadMs = performance.now() - t0;
    on = false;
    await poll;
    return { worst: Math.max(...answered.slice(1).map((t, i) => t - answered[i]!)), loadMs };
  }

  test("/health keeps answering while a slow model loads on its worker (gaps < 250 ms, or a fifth of the stall); loading on the HTTP thread stalls it (planted)", async () => {
    const cfg = config({ llama3: "llama3", qwen3: "qwen3" });
    const worker = await start({ config: cfg }, "slowLoadFactory");
    const off = await healthDuringLoad(worker).finally(() => worker.close());
    // Planted violation: the same slow start-up on this thread (no engine worker) holds /health for its length.
    const slow = (): ReturnType<typeof createEvalExecutor> => {
      const end = performance.now() + 1500;
      while (performance.now() < end);
      return createEvalExecutor();
    };
    const inline = await startServe([], flags({ config: cfg, engineWorker: false }), silent, slow, ["eval"]);
    const on = await healthDuringLoad(inline).finally(() => inline.close());
    console.log(
      `/health during a 1.5 s load: longest gap ${off.worst.toFixed(1)} ms on the worker (load ${off.loadMs.toFixed(0)} ms), ${on.worst.toFixed(0)} ms on the HTTP thread (load ${on.loadMs.toFixed(0)} ms)`,
    );
    expect(off.loadMs).toBeGreaterThan(1500);
    // On an overloaded shared machine any thread can be descheduled for a while: the bound is 250 ms or a fifth of
    // the planted stall (at least 1.5 s), whichever is larger.
    expect(off.worst).toBeLessThan(Math.max(250, on.worst / 5));
    expect(on.worst).toBeGreaterThan(1000);
  });
});

describe.skipIf(MISSING !== undefined)(`a model whose engine worker died${NOTE}`, { timeout: 300_000 }, () => {
  let s: StartedServer;
  beforeAll(async () => {
    s = await start({ config: config({ llama3: "llama3", qwen3: "qwen3" }), maxBatch: "1" }, "crashingFactory");
  }, 120_000);
  afterAll(async () => s?.close());

  test("its requests in flight fail (500), /health turns 503 failed, and the next request reloads it", async () => {
    const r = await rawRequest(s.url, "POST", "/v1/completions", {
      json: { model: "llama3", prompt: [5, 6], max_tokens: 30, ignore_eos: true },
    });
    expect(r.status).toBe(500);
    expect(JSON.parse(r.body).error.message).toMatch(/planted worker crash$/);
    expect((await rawRequest(s.url, "GET", "/health")).status).toBe(503);
    // A fresh worker (its planted crash is at its 4th program run; one token needs fewer).
    const next = await rawRequest(s.url, "POST", "/v1/completions", {
      json: { model: "llama3", prompt: [5], max_tokens: 1 },
    });
    expect(next.status).toBe(200);
    expect(await metric(s.url, "poot_model_loads_total", { model: "llama3" })).toBe(2);
    expect((await rawRequest(s.url, "GET", "/health")).status).toBe(200);
  });
});

describe("bad configuration: one line naming what is wrong", () => {
  const bad = async (o: Partial<ServeCliOptions>, models: string[] = []): Promise<string> => {
    const err = await startServe(models, flags(o), silent, () => createEvalExecutor(), ["eval"]).catch((e) => e);
    expect(err).toBeInstanceOf(CliError);
    expect(err.message).not.toContain("\n");
    return err.message as string;
  };
  const write = (json: unknown): string => {
    const file = path.join(tmp, `bad-${Math.random().toString(36).slice(2)}.json`);
    fs.writeFileSync(file, typeof json === "string" ? json : JSON.stringify(json));
    return file;
  };

  test("config fields: wrong type, unknown field, missing path, bad size, not JSON, MODEL and --config both", async () => {
    let f = write({ models: [{ path: "a" }, { path: "b", ctx: "64" }] });
    expect(await bad({ config: f })).toBe(`${f}: models[1].ctx must be integer`);
    f = write({ models: [{ path: "a", activations: "fp8" }] });
    expect(await bad({ config: f })).toMatch(new RegExp(`^${f}: models\\[0\\]\\.activations must be .*fp8-static`));
    f = write({ models: [{ path: "a", contxt: 64 }] });
    expect(await bad({ config: f })).toBe(`${f}: models[0] has an unknown field "contxt"`);
    f = write({ models: [{ id: "a" }] });
    expect(await bad({ config: f })).toBe(`${f}: models[0] needs the field "path"`);
    f = write({ "models-memory": "lots", models: [{ path: "a" }] });
    expect(await bad({ config: f })).toBe(`${f}: models-memory must be a size like 512M or 8G`);
    f = write("{ models: [");
    expect(await bad({ config: f })).toMatch(new RegExp(`^${f} is not JSON: `));
    expect(await bad({ config: f }, ["x"])).toBe("give MODEL arguments or --config FILE, not both");
  });

  test("a missing --config file: one line naming the path once, not Node's ENOENT text", async () => {
    const missing = path.join(tmp, "nonexistent.json");
    expect(await bad({ config: missing })).toBe(`no such file or folder (file ${missing})`);
  });

  test.skipIf(MISSING !== undefined)(
    "duplicate ids, --model-name with several, a model larger than the budget",
    async () => {
      const [a, b] = FAMILIES.map(dirOf) as [string, string];
      const f = write({
        models: [
          { path: a, id: "m" },
          { path: b, aliases: ["m"] },
        ],
      });
      expect(await bad({ config: f })).toMatch(/^the model name "m" is used twice \(/);
      expect(await bad({ modelName: "x" }, [a, b])).toBe(
        "--model-name names a single model: with several, give each an id in a --config file",
      );
      expect(await bad({ modelsMemory: "100K" }, [a, b])).toMatch(
        /^the model 'llama3' \(.*\) has \d+\.\d KiB of weights, more than the whole --models-memory budget of 100\.0 KiB: raise --models-memory or leave the model out$/,
      );
    },
  );
});
