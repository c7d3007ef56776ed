// Time to first token with and without the prefix cache (decision 2704), in one run: two in-process servers over
// the built packages (same model, same backend), requests whose prompts share a long prefix and differ in a short
// question. Uncached and cached requests are interleaved; the cached server is warmed with the prefix once. Every
// cached answer must equal the uncached one for the same question.
//   node bench/prefix-cache.mjs [--backend cpu|eval] [--runs 5] [--model DIR]
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { createCpuExecutor } from "@poot/backend-cpu";
import { createEvalExecutor } from "@poot/backend-reference";
import { Engine } from "@poot/runtime";
import { RuntimeServeEngine, createServer } from "@poot/serve";
import OpenAI from "openai";

const { values: o } = parseArgs({
  options: {
    backend: { type: "string", default: "cpu" },
    runs: { type: "string", default: "5" },
    model: { type: "string", default: fileURLToPath(new URL("../../../models/demo", import.meta.url)) },
  },
});
const PREFIX = (
  "You are a careful assistant. Read the following story and answer the question after it. " +
  "The old man looked at the sea and said that the water was colder than it had been in years, and the boy who " +
  "sat beside him on the broken wall listened without a word. They had fished together since the boy was small, " +
  "and every morning they walked down to the harbour before the sun came up, carrying the lines and the bait and " +
  "the heavy wooden box that held the knives. In the winter the wind came from the north and the boats stayed in, " +
  "and the old man mended the nets by the fire while the boy read to him from the books his mother had left. "
).repeat(3);

async function start(prefixCache) {
  const executor = o.backend === "cpu" ? createCpuExecutor() : createEvalExecutor();
  const engine = Engine.load(o.model, { executor, context: 512, maxSequences: 4, prefixCache });
  const se = new RuntimeServeEngine(engine, { tokenizerSource: o.model });
  const server = createServer({
    engine: se,
    modelId: "m",
    queueTimeoutMs: 0,
    limits: { headersTimeoutMs: 600_000, requestTimeoutMs: 600_000 },
  });
  const url = await server.listen({ port: 0 });
  const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: "x", maxRetries: 0, timeout: 600_000 });
  return { client, close: async () => (await server.close(), se.close(), executor.dispose()) };
}

async function ttft(client, q) {
  const t0 = performance.now();
  const stream = await client.chat.completions.create({
    model: "m",
    messages: [{ role: "user", content: `${PREFIX}\nQuestion: ${q}` }],
    max_tokens: 8,
    temperature: 0,
    stream: true,
  });
  let first = -1,
    text = "";
  for await (const c of stream) {
    if (first < 0) first = performance.now() - t0;
    text += c.choices[0]?.delta.content ?? "";
  }
  return { ms: first, text };
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const plain = await start(false),
  cached = await start(true);
await ttft(plain.client, "warm-up");
await ttft(cached.client, "warm-up");
const a = [],
  b = [];
for (let i = 0; i < Number(o.runs); i++) {
  const q = `What happened on day ${i}?`;
  const u = await ttft(plain.client, q);
  const c = await ttft(cached.client, q);
  if (u.text !== c.text)
    throw new Error(`run ${i}: cached answer ${JSON.stringify(c.text)} != ${JSON.stringify(u.text)}`);
  a.push(u.ms);
  b.push(c.ms);
  console.log(`run ${i}: uncached ${u.ms.toFixed(0)} ms, cached ${c.ms.toFixed(0)} ms`);
}
console.log(
  `TTFT median of ${o.runs}: cached ${median(b).toFixed(0)} ms, uncached ${median(a).toFixed(0)} ms, ratio ${(median(a) / median(b)).toFixed(1)}x (answers equal)`,
);
await plain.close();
await cached.close();
