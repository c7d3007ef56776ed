// Load benchmark of `poot serve`: starts the built CLI on a model (default models/demo, eval backend), then
// measures N concurrent streaming chat clients against the same requests sent one at a time (the baseline,
// interleaved run by run). Prints requests/s, tok/s, TTFT and inter-token latency percentiles, /health latency
// (idle, and while the concurrent clients run, beside a control server's: the machine's floor), and checks that every
// concurrent answer equals its sequential one and that no KV state is left afterwards. Writes
// bench-results/<date>-serve-load.json (the concurrent rate, the sequential one as its anchor). `--in-process`
// serves with `--no-engine-worker` (engine steps on the HTTP thread), for comparison.
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import http from "node:http";
import os from "node:os";
import { relative } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { Worker } from "node:worker_threads";
import { figure, gitCommit, loadSampler, ratiosOf, REPO_ROOT, writeBenchResult } from "@poot/testkit";
import OpenAI from "openai";

const { values: o } = parseArgs({
  options: {
    model: { type: "string", default: fileURLToPath(new URL("../../../models/demo", import.meta.url)) },
    clients: { type: "string", default: "16" },
    "max-tokens": { type: "string", default: "8" },
    ctx: { type: "string", default: "64" },
    "max-batch": { type: "string", default: "16" },
    runs: { type: "string", default: "3" },
    sequential: { type: "string", default: "4" },
    backend: { type: "string", default: "eval" },
    "chat-template": { type: "string" },
    "in-process": { type: "boolean", default: false },
    "engine-nice": { type: "string" },
  },
});
const CLIENTS = Number(o.clients),
  MAX_TOKENS = Number(o["max-tokens"]),
  RUNS = Number(o.runs),
  SEQ = Number(o.sequential);
const bin = fileURLToPath(new URL("../../cli/bin/poot.mjs", import.meta.url));
if (!existsSync(new URL("../../cli/dist/index.js", import.meta.url))) {
  console.error("bench: @poot/cli is not built; run `pnpm build` first");
  process.exit(1);
}

/** Starts `poot serve` on a free loopback port; resolves to its URL and the child process. */
function startServer() {
  const args = [
    bin,
    "serve",
    o.model,
    "--port",
    "0",
    "--ctx",
    o.ctx,
    "--max-batch",
    o["max-batch"],
    "--max-queue",
    String(CLIENTS * 2),
    "--backend",
    o.backend,
    "--model-name",
    "bench",
    "--queue-timeout",
    "0",
  ];
  if (o["chat-template"] !== undefined) args.push("--chat-template", o["chat-template"]);
  if (o["in-process"]) args.push("--no-engine-worker");
  if (o["engine-nice"] !== undefined) args.push("--engine-nice", o["engine-nice"]);
  const child = spawn(
    process.execPath,
    [...(process.env.POOT_BENCH_NODE_ARGS ?? "").split(" ").filter(Boolean), ...args],
    { stdio: ["ignore", "inherit", "pipe"] },
  );
  return new Promise((resolve, reject) => {
    let err = "";
    child.stderr.on("data", (d) => {
      err += d;
      process.stderr.write(d);
      const m = /on (http:\/\/\S+)/.exec(err);
      if (m) resolve({ url: m[1], child });
    });
    child.on("exit", (code) => reject(new Error(`poot serve exited with ${code}: ${err}`)));
  });
}

const prompts = Array.from({ length: CLIENTS }, (_, i) => `Tell me a fortune about number ${i}.`);

/** One streamed greedy chat: its text, token count, TTFT and inter-token gaps (ms, client side). */
async function chat(client, i) {
  const t0 = performance.now();
  // logprobs make the server send one chunk per token, so the client sees every token's arrival.
  const stream = await client.chat.completions.create({
    model: "bench",
    messages: [{ role: "user", content: prompts[i] }],
    max_tokens: MAX_TOKENS,
    temperature: 0,
    ignore_eos: true,
    logprobs: true,
    stream: true,
  });
  let text = "",
    tokens = 0,
    last = 0,
    ttft = 0;
  const gaps = [];
  for await (const chunk of stream) {
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
  return { text, tokens, ttft, gaps, ms: performance.now() - t0 };
}

const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? NaN : s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};
const median = (xs) => pct(xs, 50);

async function metric(url, name) {
  const text = await (await fetch(`${url}/metrics`)).text();
  const line = text.split("\n").find((l) => l.startsWith(`${name} `));
  return line === undefined ? NaN : Number(line.split(" ")[1]);
}

/**
 * GET base/health on a connection of its own (closed after it: the polls never share, or use up, the keep-alive
 * sockets the chat clients' fetch pool holds); resolves to [latency ms, status].
 */
function timed(base) {
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    http
      .get(`${base}/health`, { agent: false, headers: { connection: "close" } }, (res) => {
        res.resume();
        res.on("end", () => resolve([performance.now() - t0, res.statusCode]));
      })
      .on("error", reject);
  });
}

/**
 * A control HTTP server on a thread of its own that does nothing but answer: polled beside /health, its latency is
 * the machine's own floor at that moment (what any server would see on a loaded machine).
 */
async function controlServer() {
  const worker = new Worker(
    `const http = require("node:http"); const { parentPort } = require("node:worker_threads");
     const s = http.createServer((_q, r) => { r.writeHead(200, { "content-type": "application/json" }); r.end('{"status":"ok"}'); });
     s.listen(0, "127.0.0.1", () => parentPort.postMessage("http://127.0.0.1:" + s.address().port));`,
    { eval: true },
  );
  const url = await new Promise((resolve) => worker.once("message", resolve));
  return { url, stop: () => worker.terminate() };
}

/**
 * Polls GET /health and the control server alternately every 20 ms until stop() (same client process, so its own
 * latency is included): resolves to both latency lists (ms) and the count of non-200 /health answers.
 */
function healthPoller(url, control) {
  const ms = [],
    floor = [];
  let on = true,
    bad = 0;
  const done = (async () => {
    for (let i = 0; on; i++) {
      const first = i % 2 === 0 ? url : control;
      const second = first === url ? control : url;
      const [d1, s1] = await timed(first);
      const [d2, s2] = await timed(second);
      (first === url ? ms : floor).push(d1);
      (second === url ? ms : floor).push(d2);
      if ((first === url ? s1 : s2) !== 200) bad++;
      await new Promise((res) => setTimeout(res, 20));
    }
  })();
  return {
    ms,
    floor,
    stop: async () => {
      on = false;
      await done;
      return bad;
    },
  };
}

/** /health and control latencies with the server idle, for `ms` milliseconds. */
async function idleHealth(url, control, ms = 2000) {
  const p = healthPoller(url, control);
  await new Promise((res) => setTimeout(res, ms));
  if ((await p.stop()) > 0) throw new Error("/health answered other than 200 while idle");
  return p;
}

const commit = gitCommit();
const load = loadSampler();
const { url, child } = await startServer();
const control = await controlServer();
try {
  const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: "unused", maxRetries: 0, timeout: 3_600_000 });
  // Warm-up: stages the prefill and decode programs so neither phase pays for compiling them.
  await chat(client, 0);
  await Promise.all(prompts.map((_, i) => chat(client, i)));
  const seqRates = [],
    conRates = [],
    reqRates = [],
    ttfts = [],
    gaps = [],
    health = [],
    floor = [],
    idle = [],
    idleFloor = [];
  const alone = new Map();
  for (let run = 0; run < RUNS; run++) {
    let toks = 0;
    const t0 = performance.now();
    for (let i = 0; i < SEQ; i++) {
      const r = await chat(client, i);
      alone.set(i, r.text);
      toks += r.tokens;
    }
    seqRates.push((toks / (performance.now() - t0)) * 1000);
    const still = await idleHealth(url, control.url);
    idle.push(...still.ms);
    idleFloor.push(...still.floor);
    const poll = healthPoller(url, control.url);
    const t1 = performance.now();
    const all = await Promise.all(prompts.map((_, i) => chat(client, i)));
    const ms = performance.now() - t1;
    if ((await poll.stop()) > 0) throw new Error("/health answered other than 200 under load");
    health.push(...poll.ms);
    floor.push(...poll.floor);
    for (const [i, text] of alone)
      if (all[i].text !== text) throw new Error(`client ${i}: concurrent text differs from its sequential run`);
    load.sample();
    conRates.push((all.reduce((n, r) => n + r.tokens, 0) / ms) * 1000);
    reqRates.push((CLIENTS / ms) * 1000);
    for (const r of all) {
      ttfts.push(r.ttft);
      gaps.push(...r.gaps);
    }
    console.log(
      `run ${run + 1}/${RUNS}: concurrent ${conRates.at(-1).toFixed(2)} tok/s, sequential ${seqRates.at(-1).toFixed(2)} tok/s`,
    );
  }
  const pages = await metric(url, "poot_kv_pages_in_use");
  const open = await metric(url, "poot_engine_open_sequences");
  if (pages !== 0 || open !== 0) throw new Error(`KV left after the load: ${pages} pages, ${open} open sequences`);
  const cpu = os.cpus();
  console.log(`
### poot serve${o["in-process"] ? " --no-engine-worker" : ""}: ${CLIENTS} concurrent streaming chat clients vs one at a time
machine:  ${cpu[0]?.model.trim()} x${cpu.length}, ${os.platform()} ${os.release()}, node ${process.version}, backend ${o.backend}; load average ${os
    .loadavg()
    .map((x) => x.toFixed(1))
    .join(" ")} (shared machine)
date:     ${new Date().toISOString().slice(0, 16).replace("T", " ")} UTC
command:  node bench/serve-load.mjs ${process.argv.slice(2).join(" ")} (model ${o.model}, ctx ${o.ctx}, max batch ${o["max-batch"]}, ${MAX_TOKENS} greedy tokens per request; median of ${RUNS} runs)
baseline: the same server answering ${SEQ} of the requests one at a time (median of ${RUNS} runs, interleaved)
result:   ${median(conRates).toFixed(2)} tok/s   baseline ${median(seqRates).toFixed(2)} tok/s   ratio ${(median(conRates) / median(seqRates)).toFixed(2)}x
          ${median(reqRates).toFixed(3)} requests/s; TTFT p50 ${pct(ttfts, 50).toFixed(0)} ms, p90 ${pct(ttfts, 90).toFixed(0)} ms, p99 ${pct(ttfts, 99).toFixed(0)} ms; inter-token p50 ${pct(gaps, 50).toFixed(0)} ms, p90 ${pct(gaps, 90).toFixed(0)} ms, p99 ${pct(gaps, 99).toFixed(0)} ms
          /health during the concurrent phase (polled every 20 ms, ${health.length} polls): p50 ${pct(health, 50).toFixed(1)} ms, p99 ${pct(health, 99).toFixed(1)} ms, max ${Math.max(...health).toFixed(1)} ms
          control server polled beside it (the machine's floor): p50 ${pct(floor, 50).toFixed(1)} ms, p99 ${pct(floor, 99).toFixed(1)} ms
          idle, 2 s before each concurrent phase (${idle.length} polls): /health p50 ${pct(idle, 50).toFixed(1)} ms, p99 ${pct(idle, 99).toFixed(1)} ms; control p99 ${pct(idleFloor, 99).toFixed(1)} ms
          every concurrent answer equal to its sequential one; after the load 0 KV pages in use, 0 open sequences`);
  const metrics = {
    tokS: figure(conRates, "tok/s"),
    requestsS: figure(reqRates, "requests/s"),
    ttftMsP50: figure([pct(ttfts, 50)], "ms"),
    interTokenMsP50: figure([pct(gaps, 50)], "ms"),
    healthMsP99: figure([pct(health, 99)], "ms"),
    controlMsP99: figure([pct(floor, 99)], "ms"),
  };
  const anchorMetrics = { tokS: figure(seqRates, "tok/s") };
  const file = writeBenchResult({
    name: "serve-load",
    commit,
    title: `poot serve: ${CLIENTS} concurrent streaming chat clients against one at a time`,
    load: load.summary(),
    settings: {
      clients: CLIENTS,
      maxTokens: MAX_TOKENS,
      ctx: Number(o.ctx),
      maxBatch: Number(o["max-batch"]),
      runs: RUNS,
      sequential: SEQ,
    },
    anchors: [{ id: "sequential", name: `the same server answering ${SEQ} of the requests one at a time` }],
    cases: [
      {
        id: `serve-${o.backend}-${CLIENTS}-clients${o["in-process"] ? "-in-process" : ""}`,
        label: `poot serve${o["in-process"] ? " --no-engine-worker" : ""}, ${CLIENTS} concurrent clients`,
        backend: o.backend,
        format: null,
        numerics: null,
        model: existsSync(o.model) ? relative(REPO_ROOT, o.model) : o.model,
        metrics,
        anchor: "sequential",
        anchorMetrics,
        ratios: ratiosOf(metrics, anchorMetrics),
      },
    ],
    notes: ["Every concurrent answer equal to its sequential one; after the load 0 KV pages in use, 0 open sequences."],
  });
  console.log(`wrote ${relative(REPO_ROOT, file)}`);
} finally {
  child.kill("SIGTERM");
  await control.stop();
}
