// GPU entry point (bundle: packages/serve/bench/serve-gpu-bundle.sh): `poot serve`'s server in-process on the
// CUDA executor with the demo model; N concurrent streaming chat clients against the same requests one at a
// time, every concurrent answer checked against its sequential one, KV state checked free afterwards.
import * as fs from "node:fs";
import * as path from "node:path";
import { createCudaExecutor } from "@poot/backend-cuda";
import { Engine } from "@poot/runtime";
import { RuntimeServeEngine, createServer } from "@poot/serve";
import OpenAI from "openai";

const DEMO = path.resolve("models/demo");
const outDir = process.env.OUT ?? ".gpu/out";
fs.mkdirSync(outDir, { recursive: true });
const MAX_TOKENS = 32,
  RUNS = 5;

async function chat(
  client: OpenAI,
  i: number,
): Promise<{ text: string; tokens: number; ttft: number; gaps: number[] }> {
  const t0 = performance.now();
  const stream = await client.chat.completions.create({
    model: "demo",
    messages: [{ role: "user", content: `Tell me a fortune about number ${i}.` }],
    max_tokens: MAX_TOKENS,
    temperature: 0,
    logprobs: true,
    stream: true,
    ignore_eos: true,
  } as never);
  let text = "",
    tokens = 0,
    last = 0,
    ttft = 0;
  const gaps: number[] = [];
  for await (const chunk of stream as unknown as AsyncIterable<{
    choices: { delta: { content?: string }; logprobs?: { content?: unknown[] } | null }[];
  }>) {
    for (const c of chunk.choices) {
      const n = c.logprobs?.content?.length ?? 0;
      if (n === 0) continue;
      const now = performance.now();
      if (tokens === 0) ttft = now - t0;
      else gaps.push(now - last);
      last = now;
      tokens += n;
      text += c.delta.content ?? "";
    }
  }
  return { text, tokens, ttft, gaps };
}

const pct = (xs: number[], p: number): number =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))] ?? NaN;
const report: Record<string, unknown> = { date: new Date().toISOString(), maxTokens: MAX_TOKENS, runs: RUNS };
const executor = createCudaExecutor({ cacheDir: "/tmp/poot-cuda-cache" });
const engine = Engine.load(DEMO, { executor, context: 128, prefillChunk: 16 });
const serveEngine = new RuntimeServeEngine(engine);
report.device = executor.caps.device;
for (const clients of [16, 64]) {
  const server = createServer({ engine: serveEngine, modelId: "demo", maxBatch: clients, maxQueue: clients * 2 });
  const url = await server.listen({ port: 0 });
  const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: "none", maxRetries: 0, timeout: 600_000 });
  const ids = Array.from({ length: clients }, (_, i) => i);
  await chat(client, 0);
  await Promise.all(ids.map((i) => chat(client, i)));
  const seq: number[] = [],
    con: number[] = [],
    ttft: number[] = [],
    gaps: number[] = [];
  let mismatches = 0;
  for (let run = 0; run < RUNS; run++) {
    const alone = new Map<number, string>();
    let t0 = performance.now(),
      toks = 0;
    for (let i = 0; i < 8; i++) {
      const r = await chat(client, i);
      alone.set(i, r.text);
      toks += r.tokens;
    }
    seq.push((toks / (performance.now() - t0)) * 1000);
    t0 = performance.now();
    const all = await Promise.all(ids.map((i) => chat(client, i)));
    con.push((all.reduce((n, r) => n + r.tokens, 0) / (performance.now() - t0)) * 1000);
    for (const [i, t] of alone) if (all[i]!.text !== t) mismatches++;
    for (const r of all) {
      ttft.push(r.ttft);
      gaps.push(...r.gaps);
    }
  }
  const metrics = await (await fetch(`${url}/metrics`)).text();
  const gauge = (name: string): number =>
    Number(
      metrics
        .split("\n")
        .find((l) => l.startsWith(`${name} `))
        ?.split(" ")[1],
    );
  const r = {
    clients,
    concurrentTokPerSec: pct(con, 50),
    sequentialTokPerSec: pct(seq, 50),
    ratio: pct(con, 50) / pct(seq, 50),
    all: { con, seq },
    ttftMs: { p50: pct(ttft, 50), p90: pct(ttft, 90), p99: pct(ttft, 99) },
    interTokenMs: { p50: pct(gaps, 50), p90: pct(gaps, 90), p99: pct(gaps, 99) },
    mismatches,
    kvPagesAfter: gauge("poot_kv_pages_in_use"),
    openSequencesAfter: gauge("poot_engine_open_sequences"),
    compiles: gauge("poot_compiles_total"),
  };
  report[`clients${clients}`] = r;
  console.log(JSON.stringify(r));
  await server.close();
}
serveEngine.close();
executor.dispose();
fs.writeFileSync(path.join(outDir, "serve-cuda.json"), JSON.stringify(report, null, 1));
