// A bounded loopback load test: 64 concurrent streaming chat requests against the llama3 fixture on the eval
// executor and on the CPU backend (@poot/backend-cpu: Wasm kernels on worker threads) all complete, each identical to
// its sequential greedy run (and to @poot/models' own greedy loop), with continuous batching visible in the step
// count, no KV page leaked afterwards (the engine's page pool, read from /metrics, is back to zero in use), and
// /health answering while the batch runs. On the CPU backend the engine runs on the engine worker thread, as
// `poot serve` runs it, and /health's p99 during the load must meet the issue #20 bound (healthGate below); the
// planted violation runs the same load with the engine stepped on the HTTP thread, and the gate must fail.
import * as os from "node:os";
import { Worker } from "node:worker_threads";
import { type Executor } from "@poot/executor";
import { createEvalExecutor } from "@poot/backend-reference";
import { LoadedModel } from "@poot/models";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
// @ts-expect-error: a plain ES module shared with the engine-worker tests (no declarations).
import { pacedCpuExecutor } from "./executors.mjs";
import {
  LLAMA3,
  LLAMA3_TEMPLATE,
  SKIP_NOTE,
  llama3Tokenizer,
  metric,
  startTestServer,
  startWorkerServer,
  type TestServer,
  type WorkerTestServer,
} from "./server-helpers.js";

const M = "llama3";
const CLIENTS = 64;
const DISTINCT = 16;
const MAX_TOKENS = 8;

/** The bound on /health p99 during the load (ms). */
const HEALTH_P99_MS = 50;
/** A control server's p99 above this (ms) means the machine itself is overloaded: its threads wait to be scheduled. */
const OVERLOADED_FLOOR_P99_MS = 10;

/** The p-th percentile (nearest rank) of `xs`. */
const pct = (xs: readonly number[], p: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)]!;
};

/** /health latencies (ms) and, polled alternately with them, the control server's (the machine's floor). */
interface Polls {
  readonly ms: number[];
  readonly floor: number[];
}

/**
 * The /health gate (issue #20, decision 2004). The rule: /health's p99 during the load is under 50 ms when the
 * machine is not overloaded, else under the machine's own p99 floor + 50 ms. The floor is a control server that does
 * nothing but answer, on a thread of its own in the same process, polled alternately with /health by the same client
 * thread during the same load: it waits only for the machine (CPU contention from this load and from everything else
 * running), so its p99 is what any server would see; "overloaded" is that p99 at 10 ms or more. On this shared 2-core
 * machine under others' builds it is often tens to hundreds of ms, which no server design removes; the load may add
 * at most the issue's 50 ms to it. A /health that waits for engine steps (hundreds of ms each on the CPU backend)
 * fails either way: that is the planted violation below. Idle figures (no load) are reported beside.
 */
function healthGate(load: Polls) {
  const loadP99 = pct(load.ms, 99);
  const floorP99 = pct(load.floor, 99);
  const overloaded = floorP99 >= OVERLOADED_FLOOR_P99_MS;
  const bound = overloaded ? floorP99 + HEALTH_P99_MS : HEALTH_P99_MS;
  return {
    loadP50: pct(load.ms, 50),
    loadP99,
    floorP50: pct(load.floor, 50),
    floorP99,
    overloaded,
    bound,
    ok: loadP99 < bound,
  };
}

/** Starts test/load-clients.mjs on its own thread with `data`; resolves to its one answer. */
function clientThread<T>(data: Record<string, unknown>): { worker: Worker; result: Promise<T> } {
  const worker = new Worker(new URL("./load-clients.mjs", import.meta.url), { workerData: data, execArgv: [] });
  const result = new Promise<T>((resolve, reject) => {
    worker.once("message", (m: T) => {
      resolve(m);
      void worker.terminate();
    });
    worker.once("error", reject);
  });
  return { worker, result };
}

/**
 * Polls GET /health and a control server alternately every 20 ms from a client thread (once warmed up: resolves when
 * ready) until `stop()`, recording each answer's latency (ms).
 */
async function pollHealth(url: string): Promise<{ stop: () => Promise<Polls> }> {
  const control = new Worker(new URL("./load-clients.mjs", import.meta.url), {
    workerData: { role: "control" },
    execArgv: [],
  });
  const controlUrl = await new Promise<string>((resolve, reject) => {
    control.once("message", resolve);
    control.once("error", reject);
  });
  const worker = new Worker(new URL("./load-clients.mjs", import.meta.url), {
    workerData: { role: "health", url, control: controlUrl },
    execArgv: [],
  });
  await new Promise<void>((resolve, reject) => {
    worker.once("message", () => resolve());
    worker.once("error", reject);
  });
  const result = new Promise<Polls & { bad: number | null }>((resolve, reject) => {
    worker.once("message", resolve);
    worker.once("error", reject);
  });
  return {
    stop: async () => {
      worker.postMessage("stop");
      const r = await result;
      await worker.terminate();
      await control.terminate();
      expect(r.bad).toBeNull();
      return { ms: r.ms, floor: r.floor };
    },
  };
}

/** /health and control latencies with the server idle: polls 20 ms apart for `ms` milliseconds. */
async function idleHealth(url: string, ms = 2_000): Promise<Polls> {
  const p = await pollHealth(url);
  await new Promise((res) => setTimeout(res, ms));
  return p.stop();
}

const question = (i: number) => `Question number ${i % DISTINCT}: what comes next?`;

type Answer = { text: string; finish: string | null; tokens: number };

async function streamChat(s: { client: TestServer["client"] }, i: number): Promise<Answer> {
  const stream = await s.client.chat.completions.create({
    model: M,
    messages: [{ role: "user", content: question(i) }],
    max_tokens: MAX_TOKENS,
    temperature: 0,
    stream: true,
    stream_options: { include_usage: true },
  });
  let text = "";
  let finish: string | null = null;
  let tokens = -1;
  for await (const chunk of stream) {
    for (const c of chunk.choices) {
      text += c.delta.content ?? "";
      finish = c.finish_reason ?? finish;
    }
    if (chunk.usage) tokens = chunk.usage.completion_tokens;
  }
  return { text, finish, tokens };
}

/**
 * The 64 clients at once (on a thread of their own) while /health is polled (from another; and the KV page gauge from
 * here): their answers, /health's latencies, the peak KV pages in use, the steps run and the wall time.
 */
async function concurrentLoad(s: { url: string }) {
  const steps0 = await metric(s.url, "poot_engine_steps_total");
  const health = await pollHealth(s.url);
  let done = false,
    peakPages = 0;
  // The pages must really be used (so zero afterwards means they were given back, not never taken).
  const pages = (async () => {
    while (!done) {
      peakPages = Math.max(peakPages, await metric(s.url, "poot_kv_pages_in_use"));
      // Scraped from this (the server's) thread: often enough to see the pages used, rarely enough not to load it.
      await new Promise((r) => setTimeout(r, 250));
    }
  })();
  const chats = clientThread<{ answers: Answer[]; ms: number }>({
    role: "chats",
    url: s.url,
    model: M,
    maxTokens: MAX_TOKENS,
    questions: Array.from({ length: CLIENTS }, (_, i) => question(i)),
  });
  const { answers, ms } = await chats.result;
  done = true;
  await pages;
  const health_ = await health.stop();
  const steps = (await metric(s.url, "poot_engine_steps_total")) - steps0;
  return { answers, health: health_, peakPages, steps, ms };
}

const load1 = (): string => os.loadavg()[0]!.toFixed(1);

/** The gate's figures in one line, with the idle ones and the load average. */
function describeGate(gate: ReturnType<typeof healthGate>, idle: Polls, load: Polls): string {
  return `/health under load p50 ${gate.loadP50.toFixed(1)} p99 ${gate.loadP99.toFixed(1)} ms (${load.ms.length} polls), control server p50 ${gate.floorP50.toFixed(1)} p99 ${gate.floorP99.toFixed(1)} ms; idle /health p50 ${pct(idle.ms, 50).toFixed(1)} p99 ${pct(idle.ms, 99).toFixed(1)} ms, control p99 ${pct(idle.floor, 99).toFixed(1)} ms (${idle.ms.length} polls); bound ${gate.bound.toFixed(1)} ms (${gate.overloaded ? "overloaded: control p99 + 50" : "50 ms"}); load average ${load1()}`;
}

/** Sequential answers of the distinct prompts, each checked against @poot/models' greedy loop (the oracle). */
async function sequentialAnswers(s: { client: TestServer["client"] }): Promise<{ answers: Answer[]; ms: number }> {
  const t0 = performance.now();
  const answers: Answer[] = [];
  for (let i = 0; i < DISTINCT; i++) answers.push(await streamChat(s, i));
  const ms = performance.now() - t0;
  const tok = llama3Tokenizer();
  const oracle = LoadedModel.open(LLAMA3!);
  try {
    for (let i = 0; i < DISTINCT; i++) {
      const ids = tok.encode(tok.applyChatTemplate([{ role: "user", content: question(i) }]));
      const g = oracle.generate(ids, MAX_TOKENS, oracle.config.eosTokenIds).ids;
      const out = oracle.config.eosTokenIds.includes(g[g.length - 1]!) ? g.slice(0, -1) : g;
      expect(answers[i]!.text).toBe(tok.decode(out, { skipSpecial: true }));
      expect(answers[i]!.tokens).toBe(out.length);
    }
  } finally {
    oracle.close();
  }
  return { answers, ms };
}

/** The load's checks: every answer equal to its sequential run, batched, nothing left in the KV cache. */
async function checkLoad(
  url: string,
  sequential: readonly Answer[],
  r: Awaited<ReturnType<typeof concurrentLoad>>,
): Promise<number> {
  expect(r.health.ms.length).toBeGreaterThan(1);
  expect(r.peakPages).toBeGreaterThan(0);
  r.answers.forEach((a, i) => expect(a).toEqual(sequential[i % DISTINCT]));
  const tokens = r.answers.reduce((n, a) => n + a.tokens, 0);
  // One by one, 64 requests need one step per token; 16 at a time need about a sixteenth of that.
  expect(r.steps).toBeLessThan(tokens / 4);
  expect(await metric(url, "poot_kv_pages_in_use")).toBe(0);
  expect(await metric(url, "poot_kv_pages_reserved")).toBe(0);
  expect(await metric(url, "poot_active_sequences")).toBe(0);
  expect(await metric(url, "poot_engine_open_sequences")).toBe(0);
  return tokens;
}

const SERVER = { context: 48, chatTemplate: LLAMA3_TEMPLATE, maxBatch: 16, maxQueue: 64 } as const;

describe.skipIf(LLAMA3 === null)(
  `64 concurrent streaming chats on eval, in process${SKIP_NOTE}`,
  { timeout: 600_000 },
  () => {
    let s: TestServer;
    beforeAll(async () => {
      s = await startTestServer(LLAMA3!, { ...SERVER, executor: () => createEvalExecutor() });
    }, 180_000);
    afterAll(async () => s?.close(), 60_000);

    test("all complete, each equal to its sequential run; batched; nothing leaked", { timeout: 600_000 }, async () => {
      const seq = await sequentialAnswers(s);
      const r = await concurrentLoad(s);
      const tokens = await checkLoad(s.url, seq.answers, r);
      expect(s.engine.openSessions).toBe(0);
      console.log(
        `load (eval, in process): ${CLIENTS} concurrent streaming chats, ${tokens} tokens in ${(r.ms / 1000).toFixed(1)} s (${((tokens / r.ms) * 1000).toFixed(1)} tok/s, ${r.steps} steps); peak KV pages ${r.peakPages}; /health ${r.health.ms.length} polls, p99 ${pct(r.health.ms, 99).toFixed(0)} ms`,
      );
    });
  },
);

describe.skipIf(LLAMA3 === null)(
  `64 concurrent streaming chats on cpu, engine on the worker thread${SKIP_NOTE}`,
  { timeout: 600_000 },
  () => {
    let s: WorkerTestServer;
    beforeAll(async () => {
      s = await startWorkerServer(LLAMA3!, { ...SERVER, backend: "cpu" });
    }, 180_000);
    afterAll(async () => s?.close(), 60_000);

    test(`all equal to their sequential runs, nothing leaked, /health p99 under ${HEALTH_P99_MS} ms (on an overloaded machine: its floor + ${HEALTH_P99_MS} ms)`, {
      timeout: 600_000,
    }, async () => {
      const seq = await sequentialAnswers(s);
      const idle = await idleHealth(s.url);
      const r = await concurrentLoad(s);
      const tokens = await checkLoad(s.url, seq.answers, r);
      const gate = healthGate(r.health);
      console.log(
        `load (cpu, engine worker): ${CLIENTS} concurrent streaming chats, ${tokens} tokens in ${(r.ms / 1000).toFixed(1)} s (${((tokens / r.ms) * 1000).toFixed(1)} tok/s, ${r.steps} steps); peak KV pages ${r.peakPages}; ${describeGate(gate, idle, r.health)}`,
      );
      expect(gate.loadP99).toBeLessThan(gate.bound);
    });
  },
);

describe.skipIf(LLAMA3 === null)(
  `planted violation: the same cpu load with the engine stepped on the HTTP thread${SKIP_NOTE}`,
  { timeout: 600_000 },
  () => {
    let s: TestServer;
    beforeAll(async () => {
      // Each step also sleeps 150 ms on the HTTP thread, as a large model's step would take: the violation shows on
      // any machine (the fixture's own steps are a few ms, too short to fail the gate on an idle one).
      s = await startTestServer(LLAMA3!, { ...SERVER, executor: () => pacedCpuExecutor(150) });
    }, 180_000);
    afterAll(async () => s?.close(), 60_000);

    test("/health waits for engine steps: the gate fails", { timeout: 600_000 }, async () => {
      // Warm: stage the prefill and decode programs, as the sequential phase does on the worker.
      await streamChat(s, 0);
      const idle = await idleHealth(s.url);
      const r = await concurrentLoad(s);
      expect(r.answers.every((a) => a.tokens > 0)).toBe(true);
      const gate = healthGate(r.health);
      console.log(`load (cpu, in process): ${describeGate(gate, idle, r.health)}`);
      expect(gate.ok).toBe(false);
    });
  },
);
