// Continuous batching on the llama3 and qwen35 fixtures: requests of different lengths join and leave the
// batch and each equals its greedy reference; cancellation frees the State; logprobs are log-softmax.
import * as fs from "node:fs";
import { createEvalExecutor } from "@poot/backend-reference";
import { Engine, RuntimeError, Scheduler, tokenLogprobs, type GenerationEvent } from "@poot/runtime";
import { describe, expect, test } from "vitest";
import { fixture, needFixture } from "@poot/testkit";

// The fixture folders this file reads (in the repo's fixtures/; CI fails when one is missing).
const NO_FIXTURES = needFixture("hf");
const FIXTURES = NO_FIXTURES === undefined ? fixture() : undefined;

interface Reference {
  prompt_ids: number[];
  greedy_ids: number[];
}

describe.skipIf(FIXTURES === undefined)(`scheduler (${FIXTURES === undefined ? NO_FIXTURES : "present"})`, () => {
  for (const fam of ["llama3", "qwen35"] as const) {
    test(`${fam}: three requests through a batch of two each reproduce greedy_ids; no State is left`, async () => {
      const ref = JSON.parse(fs.readFileSync(fixture("hf", fam, "reference.json"), "utf8")) as Reference;
      const engine = Engine.load(fixture("hf", fam), { executor: createEvalExecutor(), context: 40 });
      try {
        const sched = new Scheduler(engine, { maxBatch: 2 });
        // Request k starts after `start` greedy tokens, so its continuation is greedy_ids[start..].
        const plan = [
          { start: 0, n: 6 },
          { start: 3, n: 3 },
          { start: 7, n: 5 },
        ];
        const handles = plan.map(({ start, n }) =>
          sched.submit([...ref.prompt_ids, ...ref.greedy_ids.slice(0, start)], {
            maxTokens: n,
            temperature: 0,
            ignoreEos: true,
          }),
        );
        expect(sched.stats.waiting).toBe(3);
        const results = await Promise.all(handles.map((h) => h.result));
        results.forEach((r, i) => {
          const { start, n } = plan[i]!;
          expect(r.ids).toEqual(ref.greedy_ids.slice(start, start + n));
          expect(r.finishReason).toBe("length");
        });
        expect(sched.stats).toMatchObject({ active: 0, waiting: 0, completed: 3 });
        expect(engine.openSessions).toBe(0);
        expect(engine.pool.stats.pagesInUse).toBe(0);
      } finally {
        engine.close();
      }
    });
  }

  test("admission control: a request waits until its KV pages are free, one that can never fit is refused; no page leaks", async () => {
    const ref = JSON.parse(fs.readFileSync(fixture("hf", "llama3", "reference.json"), "utf8")) as Reference;
    const T = ref.prompt_ids.length,
      n = 5;
    // Pages of 4 tokens; the pool holds one request of T + n tokens but not two.
    const per = Math.ceil((T + n) / 4);
    const engine = Engine.load(fixture("hf", "llama3"), {
      executor: createEvalExecutor(),
      context: 40,
      pageSize: 4,
      kvPages: per + 1,
    });
    try {
      const sched = new Scheduler(engine, { maxBatch: 4 });
      expect(() => sched.submit(ref.prompt_ids, { maxTokens: 4 * (per + 2) - T, temperature: 0 })).toThrow(
        expect.objectContaining({ code: "kv-capacity" }),
      );
      const opts = { maxTokens: n, temperature: 0, ignoreEos: true };
      const seen: number[] = [];
      const first = sched.submit(ref.prompt_ids, opts, () => seen.push(sched.stats.waiting));
      const second = sched.submit(ref.prompt_ids, opts);
      const [a, b] = await Promise.all([first.result, second.result]);
      expect(a.ids).toEqual(ref.greedy_ids.slice(0, n));
      expect(b.ids).toEqual(ref.greedy_ids.slice(0, n));
      // The second request waited for the whole of the first (it never ran beside it).
      expect(seen.every((w) => w === 1)).toBe(true);
      expect(sched.stats.rounds).toBeGreaterThanOrEqual(2 * (n - 1));
      expect(engine.pool.stats).toMatchObject({ pagesInUse: 0, pagesReserved: 0 });
    } finally {
      engine.close();
    }
  });

  test("cancel from an event handler stops the request and frees its State; logprobs match log-softmax", async () => {
    const ref = JSON.parse(fs.readFileSync(fixture("hf", "llama3", "reference.json"), "utf8")) as Reference;
    const engine = Engine.load(fixture("hf", "llama3"), { executor: createEvalExecutor(), context: 40 });
    try {
      const sched = new Scheduler(engine, { maxBatch: 4, maxWaiting: 2 });
      const events: GenerationEvent[] = [];
      const h = sched.submit(ref.prompt_ids, { maxTokens: 16, temperature: 0, ignoreEos: true, logprobs: 3 }, (ev) => {
        events.push(ev);
        if (events.length === 2) h.cancel();
      });
      const other = sched.submit(ref.prompt_ids, { maxTokens: 3, temperature: 0, ignoreEos: true });
      expect(() => sched.submit(ref.prompt_ids, { maxTokens: 1 })).toThrow(RuntimeError);
      const r = await h.result;
      expect(r.finishReason).toBe("cancelled");
      expect(r.ids).toEqual(ref.greedy_ids.slice(0, 2));
      expect((await other.result).ids).toEqual(ref.greedy_ids.slice(0, 3));
      expect(engine.openSessions).toBe(0);
      const first = events[0]!;
      if (first.kind !== "token") throw new Error("expected a token event");
      expect(first.top!.map((t) => t.id)[0]).toBe(ref.greedy_ids[0]);
      expect(first.top).toHaveLength(3);
      expect(first.logprob).toBe(first.top![0]!.logprob);
    } finally {
      engine.close();
    }
  });

  test("a seeded sampled request gives the same tokens in a batch of three as alone (qwen35, hybrid State)", async () => {
    const ref = JSON.parse(fs.readFileSync(fixture("hf", "qwen35", "reference.json"), "utf8")) as Reference;
    const engine = Engine.load(fixture("hf", "qwen35"), { executor: createEvalExecutor(), context: 40 });
    try {
      const opts = (seed: number) => ({ maxTokens: 6, temperature: 1.1, topP: 0.9, seed, ignoreEos: true });
      const alone = await new Scheduler(engine, { maxBatch: 1 }).submit(ref.prompt_ids, opts(5)).result;
      const sched = new Scheduler(engine, { maxBatch: 3 });
      const [x, y, z] = [
        sched.submit(ref.prompt_ids, opts(5)),
        sched.submit(ref.prompt_ids.slice(0, 12), opts(6)),
        sched.submit(ref.prompt_ids, opts(7)),
      ];
      const rx = await x.result;
      await Promise.all([y.result, z.result]);
      expect(rx.ids).toEqual(alone.ids);
      expect(sched.stats.rounds).toBeGreaterThan(0);
    } finally {
      engine.close();
    }
  });

  test("tokenLogprobs is the float64 log-softmax", () => {
    const l = [1, 2, 3];
    const z = Math.log(Math.exp(1) + Math.exp(2) + Math.exp(3));
    const r = tokenLogprobs(l, 0, 2);
    expect(r.logprob).toBeCloseTo(1 - z, 14);
    expect(r.top.map((t) => t.id)).toEqual([2, 1]);
    expect(r.top[0]!.logprob).toBeCloseTo(3 - z, 14);
  });
});
