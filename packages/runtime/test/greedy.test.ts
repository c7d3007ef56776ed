// Engine.greedy (decision 2201) on the demo model: the ids equal transformers' greedy continuation
// (models/demo/reference.json) whether steps run one at a time or in launches of several (the device loop's shape,
// here over host steps, with launches crossing page boundaries); a stop in the middle of a launch rolls the session
// back exactly (same tokens, pages and next logits as a step-by-step run); the argmax semantics against float64.
import * as fs from "node:fs";
import * as path from "node:path";
import { createEvalExecutor } from "@poot/backend-reference";
import { greedyArgmax as kernelgenGreedyArgmax } from "@poot/kernelgen";
import { Engine, generate, greedyArgmax, type EngineOptions, type GenerateOptions } from "@poot/runtime";
import { describe, expect, it } from "vitest";
import { REPO_ROOT } from "@poot/testkit";

const DEMO = path.join(REPO_ROOT, "models", "demo");
const HAVE = fs.existsSync(path.join(DEMO, "reference.json"));

interface DemoReference {
  prompt_ids: number[];
  greedy_ids: number[];
}

describe("greedyArgmax", () => {
  it("is the lowest index among the largest non-NaN values, -1 when none is above -inf", () => {
    expect(greedyArgmax([1, 3, 2, 3])).toBe(1);
    expect(greedyArgmax([Number.NaN, 0.5, Number.NaN, 0.25])).toBe(1);
    expect(greedyArgmax([Number.NEGATIVE_INFINITY, Number.NaN])).toBe(-1);
    expect(greedyArgmax([-1e38, Number.POSITIVE_INFINITY, Number.POSITIVE_INFINITY])).toBe(1);
  });

  it("is the device kernel's own definition (kernelgen's, beside greedy_next), not a copy", () => {
    expect(greedyArgmax).toBe(kernelgenGreedyArgmax);
  });
});

describe.skipIf(!HAVE)("Engine.greedy on models/demo (skipped when absent)", () => {
  const ref = HAVE
    ? (JSON.parse(fs.readFileSync(path.join(DEMO, "reference.json"), "utf8")) as DemoReference)
    : { prompt_ids: [], greedy_ids: [] };
  const open = (o: Partial<EngineOptions> = {}) =>
    Engine.load(DEMO, { executor: createEvalExecutor(), context: 40, prefillChunk: 8, pageSize: 4, ...o });
  /** Prompt, then greedy: the first id from the prompt's logits, `count` more from Engine.greedy. */
  const run = (engine: Engine, count: number, stop?: (id: number, i: number) => boolean) => {
    const s = engine.openSession();
    const first = greedyArgmax(s.step(ref.prompt_ids));
    return { s, first, ids: engine.greedy(s, first, count, stop === undefined ? {} : { stop }) };
  };

  it.each([
    ["steps", 1],
    ["host-launches", 3],
    ["host-launches", 5],
  ] as const)("%s (%i a launch): the ids are transformers' greedy ids", (mode, K) => {
    const engine = open({ greedyLoop: mode, greedyTokensPerLaunch: K });
    try {
      const { s, first, ids } = run(engine, 23);
      expect([first, ...ids]).toEqual(ref.greedy_ids);
      // Held: prompt, first and every id but the last; pages for exactly that; the last id not run.
      expect(s.tokens).toEqual([...ref.prompt_ids, first, ...ids.slice(0, -1)]);
      expect(s.pages).toHaveLength(Math.ceil(s.length / 4));
      expect(s.queued).toEqual([]);
      if (mode === "host-launches") expect(engine.stats.greedyLaunches).toBe(Math.ceil(23 / K));
    } finally {
      engine.close();
    }
  });

  it("a stop inside a launch rolls back exactly: same tokens, pages and next logits as step by step", () => {
    const stopAt = (id: number, i: number) => i === 6 && id === ref.greedy_ids[7];
    const a = open({ greedyLoop: "steps" }),
      b = open({ greedyLoop: "host-launches", greedyTokensPerLaunch: 5 });
    try {
      const ra = run(a, 20, stopAt),
        rb = run(b, 20, stopAt);
      expect(rb.ids).toEqual(ref.greedy_ids.slice(1, 8));
      expect(rb.ids).toEqual(ra.ids);
      // Two launches of 5 ran 10 steps; 7 ids were used (the last not run): 4 steps rolled back.
      expect(b.stats.greedyRolledBack).toBe(10 - 7);
      expect(rb.s.tokens).toEqual(ra.s.tokens);
      expect(rb.s.pages.length).toBe(ra.s.pages.length);
      expect(b.pool.stats.pagesInUse).toBe(a.pool.stats.pagesInUse);
      // Continuing from the stop: the KV entries the rolled-back steps wrote are overwritten, never read.
      const next = rb.ids[rb.ids.length - 1]!;
      const la = ra.s.step([next]),
        lb = rb.s.step([next]);
      expect(Buffer.from(lb.buffer).equals(Buffer.from(la.buffer))).toBe(true);
      expect([...b.greedy(rb.s, greedyArgmax(lb), 6)]).toEqual(ref.greedy_ids.slice(9, 15));
      // Planted: a loop that kept the rolled-back tokens would hold more than the step-by-step session.
      expect(rb.s.length).not.toBe(ra.s.length + 10 - 7);
    } finally {
      a.close();
      b.close();
    }
  });

  it("refuses queued tokens and bad counts with one-line errors; the context's end falls back to steps", () => {
    const engine = open({ greedyLoop: "host-launches", greedyTokensPerLaunch: 8, context: 24 });
    try {
      const s = engine.openSession();
      s.feed(ref.prompt_ids);
      expect(() => engine.greedy(s, 1, 3)).toThrow(expect.objectContaining({ code: "bad-tokens" }));
      const first = greedyArgmax(s.step());
      expect(() => engine.greedy(s, first, -1)).toThrow(expect.objectContaining({ code: "bad-config" }));
      // 10 prompt tokens + first: 13 positions left, one launch of 8 fits, the rest run as steps.
      const ids = engine.greedy(s, first, 13);
      expect([first, ...ids]).toEqual(ref.greedy_ids.slice(0, 14));
      expect(engine.stats.greedyLaunches).toBe(1);
      expect(s.length).toBe(23);
    } finally {
      engine.close();
    }
  });

  it.each([
    ["16 tokens", { maxTokens: 16, temperature: 0, ignoreEos: true }],
    ["a stop string inside a launch", { maxTokens: 40, temperature: 0, ignoreEos: true, stop: ["you'"] }],
    ["a stop token id", { maxTokens: 40, temperature: 0, stopTokenIds: [525] }],
    ["the context's end", { maxTokens: 200, temperature: 0, ignoreEos: true }],
  ] as [string, GenerateOptions][])(
    "generate with %s: the same events, result and session through launches as step by step",
    (_, options) => {
      const runOne = (o: Partial<EngineOptions>) => {
        const engine = open({ context: 48, ...o });
        try {
          const s = engine.openSession();
          const it = generate(engine, s, ref.prompt_ids, options);
          const events: unknown[] = [];
          for (let r = it.next(); ; r = it.next()) {
            if (r.done === true) {
              const { prefillMs: _p, decodeMs: _d, ...result } = r.value;
              return {
                events,
                result,
                tokens: [...s.tokens],
                queued: [...s.queued],
                launches: engine.stats.greedyLaunches,
              };
            }
            events.push(r.value);
          }
        } finally {
          engine.close();
        }
      };
      const steps = runOne({ greedyLoop: "steps" }),
        launches = runOne({ greedyLoop: "host-launches", greedyTokensPerLaunch: 3 });
      expect(launches.launches).toBeGreaterThan(0);
      expect(steps.launches).toBe(0);
      expect(launches.result).toEqual(steps.result);
      expect(launches.events).toEqual(steps.events);
      expect(launches.tokens).toEqual(steps.tokens);
      expect(launches.queued).toEqual(steps.queued);
      const n = Math.min(steps.result.ids.length, ref.greedy_ids.length);
      expect(steps.result.ids.slice(0, n)).toEqual(ref.greedy_ids.slice(0, n));
    },
  );
});
