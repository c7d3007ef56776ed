// The weight pager under blocks (two host devices): with a budget of a third of the weights, blocks are paged (LRU)
// and give the same answer, the next block's weights are read ahead; planted: no read-ahead, a forgotten State.
import { createEvalExecutor } from "@poot/backend-reference";
import { Engine, findBlocks, placeAll, type PagerStats } from "@poot/runtime";
import { describe, expect, test } from "vitest";
import { assertSameAnswer, greedyRun } from "./blocks-helpers.js";
import { fixture } from "@poot/testkit";
import { NO_FIXTURES, FIXTURES, devices, hfCase, ggufCase, N, probeGraph } from "./blocks-cases.js";

describe.skipIf(FIXTURES === undefined)(
  `blocks: the weight pager (${FIXTURES === undefined ? NO_FIXTURES : "present"})`,
  () => {
    for (const c of [
      { name: "hf/llama3", dir: () => fixture("hf", "llama3") },
      { name: "hf/qwen35", dir: () => fixture("hf", "qwen35") },
      { name: "gguf/llama3-w256 Q8_0", dir: () => fixture("gguf", "llama3-w256", "model-Q8_0.gguf") },
    ]) {
      test(`${c.name}: a budget of one third of the weights pages blocks (LRU) and gives the same answer`, () => {
        const prompt = c.name.startsWith("hf/")
          ? hfCase(c.name.slice(3)).prompt
          : ggufCase("llama3-w256", "Q8_0").prompt;
        const single = Engine.load(c.dir(), {
          executor: createEvalExecutor(),
          context: prompt.length + N,
          prefillChunk: 8,
        });
        const ref = greedyRun(single, prompt, N);
        const L = single.config.numLayers;
        single.close();
        const probe = Engine.load(c.dir(), {
          executor: createEvalExecutor(),
          devices: devices(),
          placement: placeAll(L, "a"),
          context: 4,
        });
        const report = probe.placementReport()!;
        probe.close();
        const total = report.weightBytesByDevice["a"]!;
        // One third of the weights, or the largest block where that is more (the fixtures have 2 layers and a large
        // embedding: a third of them holds no block).
        const cut = findBlocks(probeGraph(c.dir()));
        const budget = Math.max(Math.floor(total / 3), ...cut.blocks.map((b) => b.weightBytes));
        expect(budget).toBeLessThan(total / 2);
        const devs = devices();
        const engine = Engine.load(c.dir(), {
          executor: devs[0]!.executor,
          devices: devs,
          placement: placeAll(L, "a"),
          budgets: { a: budget },
          deviceFactories: { a: () => createEvalExecutor() },
          context: prompt.length + N,
          prefillChunk: 8,
        });
        try {
          const r = engine.placementReport()!;
          expect(r.pagedDevices).toEqual({ a: budget });
          expect(r.unitsPerToken).toBe(L + 2);
          assertSameAnswer(greedyRun(engine, prompt, N), ref, "paged");
          const st = engine.pagerStats!;
          // Every step pages blocks in: more than one block per step never fits, so each step reads weights.
          expect(st.pageIns).toBeGreaterThan(N);
          expect(st.pageOuts).toBeGreaterThan(0);
          expect(st.pageInBytes).toBeGreaterThan(total);
          expect(st.stallMs).toBeGreaterThan(0);
          for (const [, bytes] of Object.entries(engine.pipeline!.pager!.residentBytes()))
            expect(bytes).toBeLessThanOrEqual(budget);
        } finally {
          engine.close();
        }
      });
    }

    // Prefetch (decision 1706): with room for two blocks, each block's weights are read on the reader thread while the
    // block before it runs; the answer is the unpaged run's with and without it.
    for (const c of [
      { name: "hf/llama3", dir: () => fixture("hf", "llama3"), prompt: () => hfCase("llama3").prompt },
      {
        name: "gguf/llama3-w256 Q8_0",
        dir: () => fixture("gguf", "llama3-w256", "model-Q8_0.gguf"),
        prompt: () => ggufCase("llama3-w256", "Q8_0").prompt,
      },
    ]) {
      test(`${c.name}: the next block's weights are read ahead while the current one runs (planted: no read-ahead)`, () => {
        const prompt = c.prompt();
        const single = Engine.load(c.dir(), {
          executor: createEvalExecutor(),
          context: prompt.length + N,
          prefillChunk: 8,
        });
        const ref = greedyRun(single, prompt, N);
        const L = single.config.numLayers;
        single.close();
        const cut = findBlocks(probeGraph(c.dir()));
        const sizes = cut.blocks.map((b) => b.weightBytes).sort((a, b) => b - a);
        const budget = sizes[0]! + sizes[1]!;
        const run = (prefetch: boolean, plant?: (e: Engine) => void) => {
          const devs = devices();
          const engine = Engine.load(c.dir(), {
            executor: devs[0]!.executor,
            devices: devs,
            placement: placeAll(L, "a"),
            budgets: { a: budget },
            deviceFactories: { a: () => createEvalExecutor() },
            context: prompt.length + N,
            prefillChunk: 8,
            prefetch,
          });
          try {
            plant?.(engine);
            assertSameAnswer(greedyRun(engine, prompt, N), ref, prefetch ? "prefetched" : "paged");
            return { ...engine.pagerStats! };
          } finally {
            engine.close();
          }
        };
        const readAhead = (st: PagerStats): void => {
          // Every page-in reads its tensors from the checkpoint again (no host cache): read now or read ahead...
          if (st.syncReads + st.prefetches < st.pageIns)
            throw new Error(`${st.pageIns} page-ins read only ${st.syncReads} + ${st.prefetches} times`);
          // ...and most page-ins found their weights read ahead: at most one block a step is read on the step's thread.
          if (st.prefetches < st.pageIns / 2)
            throw new Error(`only ${st.prefetches} of ${st.pageIns} page-ins were read ahead`);
        };
        const on = run(true);
        const off = run(false);
        readAhead(on);
        expect(on.prefetchedBytes).toBeGreaterThan(0);
        expect(on.syncReads).toBeLessThan(off.syncReads);
        expect(off.prefetches).toBe(0);
        expect(() => readAhead(off)).toThrow(/page-ins were read ahead/);
        // Planted: a pipeline that never asks for the next block ahead.
        const none = run(true, (e) => {
          e.pipeline!.prefetch = () => {};
        });
        expect(() => readAhead(none)).toThrow(/page-ins were read ahead/);
      });
    }

    test("planted: a pager that forgets a block's State on page-out fails the gate", () => {
      const c = hfCase("llama3");
      const single = Engine.load(c.model, { executor: createEvalExecutor(), context: 40 });
      const ref = greedyRun(single, c.prompt, 8);
      single.close();
      const devs = devices();
      const engine = Engine.load(c.model, {
        executor: devs[0]!.executor,
        devices: devs,
        placement: placeAll(2, "a"),
        budgets: { a: 200_000 },
        deviceFactories: { a: () => createEvalExecutor() },
        context: 40,
      });
      try {
        const pager = engine.pipeline!.pager!;
        const pageOut = pager.pageOut.bind(pager);
        pager.pageOut = (u) => {
          pageOut(u);
          u.saved = null;
        };
        expect(() => assertSameAnswer(greedyRun(engine, c.prompt, 8), ref, "planted")).toThrow(
          /planted: (logits|greedy ids) differ/,
        );
      } finally {
        engine.close();
      }
    });
  },
);
