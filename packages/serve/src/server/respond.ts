// Serves planned generations over HTTP: either one JSON body when every choice is done, or server-sent
// events as tokens arrive (ending with `data: [DONE]`); a client that disconnects cancels its generations.
import type { FastifyReply } from "fastify";
import { ApiError } from "../errors.js";
import { Channel } from "./channel.js";
import type { PlannedRequest } from "./requests.js";
import type { ChoiceResult, Renderer, Usage } from "./responses.js";
import type { GenerationEvent, GenerationJob, ServeScheduler, TokenEvent } from "./scheduler-api.js";

/** Events of several jobs as they happen, each tagged with its job's index. */
function merged(
  jobs: readonly GenerationJob[],
): AsyncIterable<{ readonly index: number; readonly event: GenerationEvent }> {
  const out = new Channel<{ index: number; event: GenerationEvent }>();
  let open = jobs.length;
  jobs.forEach(async (job, index) => {
    for await (const event of job.events) out.push({ index, event });
    if (--open === 0) out.close();
  });
  return out;
}

function usageOf(plan: PlannedRequest, completion: readonly number[]): Usage {
  // Choices of one prompt share it: count each distinct prompt once, as OpenAI does for n > 1.
  const prompts = new Set(plan.generations.map((g) => g.prompt));
  const prompt_tokens = [...prompts].reduce((n, p) => n + p.length, 0);
  const completion_tokens = completion.reduce((a, b) => a + b, 0);
  return { prompt_tokens, completion_tokens, total_tokens: prompt_tokens + completion_tokens };
}

/** Runs `plan` on the scheduler and answers through `reply` with `render`'s shapes. */
export async function respond(
  scheduler: ServeScheduler,
  plan: PlannedRequest,
  render: Renderer,
  reply: FastifyReply,
): Promise<void> {
  const jobs = scheduler.submit(plan.generations);
  let done = false;
  // A client gone before the end (socket closed) cancels every choice and frees its sequences.
  reply.raw.on("close", () => {
    if (!done) for (const j of jobs) j.cancel();
  });
  // A client gone while the request was parsed and planned: nothing will read the answer.
  if (reply.raw.socket === null || reply.raw.socket.destroyed) for (const j of jobs) j.cancel();
  if (plan.stream) return stream(plan, jobs, render, reply, () => (done = true));
  const texts = jobs.map(() => "");
  const tokens: TokenEvent[][] = jobs.map(() => []);
  const choices: ChoiceResult[] = [];
  const counts = jobs.map(() => 0);
  for await (const { index, event } of merged(jobs)) {
    if (event.kind === "token") {
      texts[index] += event.text;
      tokens[index]!.push(event);
    } else if (event.kind === "done") {
      counts[index] = event.completionTokens;
      choices[index] = {
        index,
        text: texts[index] + event.text,
        tokens: tokens[index]!,
        finishReason: event.finishReason,
      };
    } else {
      done = true;
      for (const j of jobs) j.cancel();
      throw event.error;
    }
  }
  done = true;
  if (choices.filter((c) => c !== undefined).length !== jobs.length)
    throw new ApiError(503, "server_shutting_down", "the generation was cancelled");
  await reply.send(render.body(choices, usageOf(plan, counts)));
}

async function stream(
  plan: PlannedRequest,
  jobs: readonly GenerationJob[],
  render: Renderer,
  reply: FastifyReply,
  finished: () => void,
): Promise<void> {
  // The status goes out with the first event, not before: a request that fails while still queued (queue timeout,
  // shutdown) gets its real status (503) rather than a 200 stream carrying an error.
  const events = merged(jobs)[Symbol.asyncIterator]();
  const first = await events.next();
  const head = first.done === true ? null : first.value.event;
  if (head === null || head.kind === "error") {
    finished();
    for (const j of jobs) j.cancel();
    throw head === null ? new ApiError(503, "server_shutting_down", "the generation was cancelled") : head.error;
  }
  reply.hijack();
  const res = reply.raw;
  res.writeHead(200, {
    "content-type": "text/event-stream; charset=utf-8",
    "cache-control": "no-cache",
    connection: "keep-alive",
  });
  const send = (data: unknown): void =>
    void res.write(`data: ${typeof data === "string" ? data : JSON.stringify(data)}\n\n`);
  jobs.forEach((_, i) => {
    const open = render.opening(i);
    if (open !== null) send(open);
  });
  const rest = { [Symbol.asyncIterator]: () => events };
  const all = (async function* () {
    yield first.value!;
    yield* rest;
  })();
  const counts = jobs.map(() => 0);
  const wantTokens = plan.generations[0]?.logprobs !== null;
  let failed = false;
  for await (const { index, event } of all) {
    if (res.destroyed) break;
    if (event.kind === "token") {
      // Text held back (a partial character or stop-string prefix) sends nothing unless logprobs need the token.
      if (event.text !== "" || wantTokens) send(render.chunk(index, event.text, [event], null));
    } else if (event.kind === "done") {
      counts[index] = event.completionTokens;
      send(render.chunk(index, event.text, [], event.finishReason));
    } else {
      failed = true;
      send(event.error.body());
      for (const j of jobs) j.cancel();
    }
  }
  finished();
  if (!res.destroyed) {
    if (!failed && plan.includeUsage) send(render.usageChunk(usageOf(plan, counts)));
    send("[DONE]");
    res.end();
  }
}
