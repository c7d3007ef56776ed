// The load test's clients, on threads of their own (test/load.test.ts): the server under test runs on the test's
// main thread, and clients sharing that event loop and heap would add their own work and garbage collection to the
// /health latency measured. Role "chats": N streaming greedy chats at once, posting their answers. Role "control":
// an HTTP server that does nothing but answer, on a thread of its own (posting its URL): the latency floor of this
// machine at that moment. Role "health": GET /health and the control server's /health alternately every 20 ms
// (after warm-up requests, posting "ready") until told to stop, posting each answer's latency (ms); all must be 200.
import * as http from "node:http";
import { parentPort, workerData } from "node:worker_threads";
import OpenAI from "openai";

const { role, url } = workerData;

/** GET url + /health; resolves to [latency ms, status]. */
async function timed(base) {
  const t0 = performance.now();
  const r = await fetch(`${base}/health`);
  await r.arrayBuffer();
  return [performance.now() - t0, r.status];
}

if (role === "chats") {
  const { model, questions, maxTokens } = workerData;
  const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: "unused", maxRetries: 0, timeout: 300_000 });
  const chat = async (content) => {
    const stream = await client.chat.completions.create({
      model,
      messages: [{ role: "user", content }],
      max_tokens: maxTokens,
      temperature: 0,
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = "";
    let finish = null;
    let tokens = -1;
    for await (const chunk of stream) {
      for (const c of chunk.choices) {
        text += c.delta.content ?? "";
        finish = c.finish_reason ?? finish;
      }
      if (chunk.usage) tokens = chunk.usage.completion_tokens;
    }
    return { text, finish, tokens };
  };
  const t0 = performance.now();
  const answers = await Promise.all(questions.map(chat));
  parentPort.postMessage({ answers, ms: performance.now() - t0 });
} else if (role === "control") {
  const server = http.createServer((_req, res) => {
    res.writeHead(200, { "content-type": "application/json" });
    res.end('{"status":"ok"}');
  });
  server.listen(0, "127.0.0.1", () => parentPort.postMessage(`http://127.0.0.1:${server.address().port}`));
  parentPort.once("message", () => server.close(() => parentPort.close()));
} else {
  const { control } = workerData;
  let on = true;
  parentPort.once("message", () => (on = false));
  // Warm-up, not recorded: the thread's first fetches load and set up its HTTP client.
  for (let i = 0; i < 5; i++) await Promise.all([timed(url), timed(control)]);
  parentPort.postMessage("ready");
  const ms = [];
  const floor = [];
  let bad = null;
  for (let i = 0; on; i++) {
    // Alternate which goes first, so neither always waits behind the other.
    const [a, b] = i % 2 === 0 ? [url, control] : [control, url];
    const [da, sa] = await timed(a);
    const [db, sb] = await timed(b);
    (a === url ? ms : floor).push(da);
    (b === url ? ms : floor).push(db);
    for (const s of [sa, sb]) if (s !== 200) bad = s;
    await new Promise((res) => setTimeout(res, 20));
  }
  parentPort.postMessage({ ms, floor, bad });
}
