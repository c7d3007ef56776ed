// Scheduler semantics over the real runtime (llama3 fixture, eval backend): all-or-none queueing with a
// 429, cancel of a waiting job, shutdown failing everything with 503, and sequences released in every case.
import { createEvalExecutor } from "@poot/backend-reference";
import { Engine } from "@poot/runtime";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { ApiError } from "../errors.js";
import { RuntimeServeEngine } from "./runtime-engine.js";
import { Scheduler } from "./scheduler.js";
import type { GenerationEvent, GenerationRequest } from "./scheduler-api.js";
import { fixture, needFixture } from "@poot/testkit";

const NO_FIXTURES = needFixture("hf/llama3");
const LLAMA3 = fixture("hf/llama3");

const request = (prompt: number[], maxTokens: number): GenerationRequest => ({
  prompt,
  maxTokens,
  sampling: {
    temperature: 0,
    topP: 1,
    frequencyPenalty: 0,
    presencePenalty: 0,
    topK: 0,
    minP: 0,
    repetitionPenalty: 1,
    logitBias: new Map(),
  },
  stop: [],
  logprobs: null,
  ignoreEos: true,
});

async function drain(events: AsyncIterable<GenerationEvent>): Promise<GenerationEvent[]> {
  const out: GenerationEvent[] = [];
  for await (const e of events) out.push(e);
  return out;
}

describe.skipIf(NO_FIXTURES !== undefined)(
  `Scheduler over the runtime${NO_FIXTURES === undefined ? "" : ` (skipped: ${NO_FIXTURES})`}`,
  { timeout: 120_000 },
  () => {
    let engine: RuntimeServeEngine;
    const executor = createEvalExecutor();
    beforeAll(() => {
      engine = new RuntimeServeEngine(Engine.load(LLAMA3, { executor, context: 32, prefillChunk: 16 }));
    });
    afterAll(() => {
      engine?.close();
      executor.dispose();
    });

    test("runs to max tokens: one token event per token, then done with the counts", async () => {
      const s = new Scheduler(engine, { maxBatch: 2, maxQueue: 4 });
      const [job] = s.submit([request([5, 6, 7], 4)]);
      const events = await drain(job!.events);
      expect(events.filter((e) => e.kind === "token").length).toBe(4);
      expect(events.at(-1)).toMatchObject({
        kind: "done",
        finishReason: "length",
        promptTokens: 3,
        completionTokens: 4,
      });
      expect(engine.stats().openSequences).toBe(0);
    });

    test("the choices of one request queue together or not at all (429 with no partial admission)", () => {
      const s = new Scheduler(engine, { maxBatch: 1, maxQueue: 2 });
      const jobs = s.submit([request([1, 2], 2), request([1, 2], 2)]);
      expect(s.queueDepth).toBe(2);
      let err: unknown;
      try {
        s.submit([request([3], 2)]);
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(ApiError);
      expect((err as ApiError).status).toBe(429);
      expect(s.queueDepth).toBe(2);
      for (const j of jobs) j.cancel();
      expect(s.queueDepth).toBe(0);
    });

    test("a cancelled waiting job leaves the queue and its events end; the running one finishes", async () => {
      const s = new Scheduler(engine, { maxBatch: 1, maxQueue: 4 });
      const [a, b] = s.submit([request([5, 6], 6), request([7, 8], 6)]);
      b!.cancel();
      expect(await drain(b!.events)).toEqual([]);
      const ea = await drain(a!.events);
      expect(ea.at(-1)).toMatchObject({ kind: "done", completionTokens: 6 });
      expect(engine.stats().openSequences).toBe(0);
    });

    test("drain refuses new work with 503 but lets queued and running generations finish", async () => {
      const s = new Scheduler(engine, { maxBatch: 1, maxQueue: 4 });
      const [a, b] = s.submit([request([5, 6], 5), request([7, 8], 5)]);
      const drained = s.drain(60_000);
      expect(() => s.submit([request([1], 1)])).toThrow(
        expect.objectContaining({ status: 503, code: "server_shutting_down" }),
      );
      const [ea, eb] = await Promise.all([drain(a!.events), drain(b!.events)]);
      expect(ea.at(-1)).toMatchObject({ kind: "done", completionTokens: 5 });
      expect(eb.at(-1)).toMatchObject({ kind: "done", completionTokens: 5 });
      expect(await drained).toBe(true);
      expect(engine.stats().openSequences).toBe(0);
    });

    test("drain gives up after its timeout, and shutdown then ends what is left", async () => {
      const s = new Scheduler(engine, { maxBatch: 1, maxQueue: 4 });
      const [a] = s.submit([request([5, 6], 25)]);
      expect(await s.drain(1)).toBe(false);
      s.shutdown();
      expect((await drain(a!.events)).at(-1)).toMatchObject({ kind: "error", error: { status: 503 } });
      expect(engine.stats().openSequences).toBe(0);
    });

    test("shutdown fails running and waiting jobs with 503 and frees their sequences; later submissions get 503", async () => {
      const s = new Scheduler(engine, { maxBatch: 1, maxQueue: 4 });
      const [a, b] = s.submit([request([5, 6], 20), request([7, 8], 20)]);
      const it = a!.events[Symbol.asyncIterator]();
      expect((await it.next()).value).toMatchObject({ kind: "token" });
      s.shutdown();
      const rest: GenerationEvent[] = [];
      for (let r = await it.next(); r.done !== true; r = await it.next()) rest.push(r.value);
      expect(rest.at(-1)).toMatchObject({ kind: "error", error: { status: 503, code: "server_shutting_down" } });
      expect((await drain(b!.events)).at(-1)).toMatchObject({ kind: "error", error: { status: 503 } });
      expect(engine.stats().openSequences).toBe(0);
      expect(() => s.submit([request([1], 1)])).toThrow(ApiError);
    });
  },
);
