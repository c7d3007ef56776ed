// Blocks on two host devices (two eval executors, "a" and "b"): every HF fixture family and every GGUF fixture
// gives the single-device run's greedy ids and logits within 1e-6 when split across devices, and when a block
// moves at token 5 and back at token 10; the greedy ids are also transformers' (HF) — the oracle nobody here
// wrote. Each gate is shown failing on a planted violation.
import * as fs from "node:fs";
import { type Executor, type WeightSource } from "@poot/executor";
import { createEvalExecutor } from "@poot/backend-reference";
import type { Graph } from "@poot/graph-ir";
import { LoadedModel } from "@poot/models";
import {
  Engine,
  findBlocks,
  gpuLayers,
  parsePlacement,
  placeAll,
  type BlockDevice,
  type PagerStats,
  type PipelineProgram,
  type Placement,
} from "@poot/runtime";
import { describe, expect, test } from "vitest";
import { assertSameAnswer, greedyRun } from "./blocks-helpers.js";
import { fixture, needFixture } from "@poot/testkit";

// The fixture folders this file reads (in the repo's fixtures/; CI fails when one is missing).
const NO_FIXTURES = needFixture("hf", "gguf");
const FIXTURES = NO_FIXTURES === undefined ? fixture() : undefined;

const HF = [
  "llama3",
  "gemma3",
  "qwen3",
  "qwen35",
  "olmoe",
  "deepseek2",
  "gptoss",
  "granite",
  "phi4",
  "smollm3",
] as const;
const GGUF = ["llama3", "gemma3", "olmoe", "qwen3", "llama3-w256", "qwen3-w256"] as const;
const TYPES = ["F32", "F16", "Q8_0", "Q4_K_M"] as const;

function devices(): BlockDevice[] {
  return [
    { name: "a", executor: createEvalExecutor() },
    { name: "b", executor: createEvalExecutor() },
  ];
}

/** A placement with every boundary kind: embed and layer 0 on a, the other layers on b, the head back on a. */
function split(layers: number): Placement {
  const text = layers > 1 ? `0:a,1-${layers - 1}:b,head:a` : "embed:a,0:b,head:a";
  return parsePlacement(text, layers, ["a", "b"]);
}

interface Case {
  readonly model: string;
  readonly prompt: number[];
  readonly greedy: number[] | null;
}

function hfCase(fam: string): Case {
  const ref = JSON.parse(fs.readFileSync(fixture("hf", fam, "reference.json"), "utf8")) as {
    prompt_ids: number[];
    greedy_ids: number[];
  };
  return { model: fixture("hf", fam), prompt: ref.prompt_ids, greedy: ref.greedy_ids };
}

function ggufCase(dir: string, type: string): Case {
  const ref = JSON.parse(fs.readFileSync(fixture("gguf", dir, `reference-${type}.json`), "utf8")) as {
    prompt_ids: number[];
  };
  return { model: fixture("gguf", dir, `model-${type}.gguf`), prompt: ref.prompt_ids.slice(0, 8), greedy: null };
}

const N = 14;

function check(c: Case): void {
  const single = Engine.load(c.model, {
    executor: createEvalExecutor(),
    context: c.prompt.length + N,
    prefillChunk: 8,
  });
  const ref = greedyRun(single, c.prompt, N);
  const L = single.config.numLayers;
  single.close();
  if (c.greedy !== null) expect(ref.ids).toEqual(c.greedy.slice(0, N));
  const devs = devices();
  const place = split(L);
  const engine = Engine.load(c.model, {
    executor: devs[0]!.executor,
    devices: devs,
    placement: place,
    context: c.prompt.length + N,
    prefillChunk: 8,
  });
  try {
    expect(engine.placementReport()!.unitsPerToken).toBe(3);
    assertSameAnswer(greedyRun(engine, c.prompt, N), ref, "split");
    // Layer 0 moves to b at token 5 (b then runs layers 0..L-1 as one unit) and back to a at token 10.
    const moved = parsePlacement(`embed:a,0-${L - 1}:b,head:a`, L, ["a", "b"]);
    assertSameAnswer(
      greedyRun(
        engine,
        c.prompt,
        N,
        new Map([
          [5, moved],
          [10, place],
        ]),
      ),
      ref,
      "relocated",
    );
    expect(engine.pipelineStats!.relocations).toBe(2);
    expect(engine.pipelineStats!.relocatedStateBytes).toBeGreaterThan(0);
  } finally {
    engine.close();
  }
}

describe.skipIf(FIXTURES === undefined)(
  `blocks: same answer anywhere (${FIXTURES === undefined ? NO_FIXTURES : "present"})`,
  () => {
    for (const fam of HF)
      test(`hf/${fam}: split across two devices and relocated at tokens 5 and 10`, () => check(hfCase(fam)));
    for (const dir of GGUF)
      test(`gguf/${dir}: every file split and relocated`, () => {
        for (const t of TYPES) check(ggufCase(dir, t));
      });

    test("planted: a device that computes one weight differently fails the gate", () => {
      const c = hfCase("llama3");
      const single = Engine.load(c.model, { executor: createEvalExecutor(), context: 40 });
      const ref = greedyRun(single, c.prompt, 6);
      const L = single.config.numLayers;
      single.close();
      // Device b scales one layer-1 weight by (1 + 1e-4): a wrong-answer device the gate must catch.
      const wrong = perturbing(createEvalExecutor(), (k) => k.includes("layers.1.") && k.endsWith("down_proj.weight"));
      const devs = [
        { name: "a", executor: createEvalExecutor() },
        { name: "b", executor: wrong },
      ];
      const engine = Engine.load(c.model, {
        executor: devs[0]!.executor,
        devices: devs,
        placement: split(L),
        context: 40,
      });
      try {
        expect(() => assertSameAnswer(greedyRun(engine, c.prompt, 6), ref, "planted")).toThrow(
          /planted: (logits differ|greedy ids differ)/,
        );
      } finally {
        engine.close();
      }
    });

    test("decode with a split placement allocates nothing: no hand-off buffer, no device bytes, no staging (planted allocation caught)", () => {
      const c = hfCase("llama3");
      const devs = devices();
      const engine = Engine.load(c.model, {
        executor: devs[0]!.executor,
        devices: devs,
        placement: split(2),
        context: 40,
      });
      try {
        const s = engine.openSession();
        let row = s.step(c.prompt);
        row = s.step([0]);
        const gate = (steps: number): void => {
          const before = {
            alloc: engine.pipelineStats!.handoffAllocations,
            staged: engine.stats.programsStaged,
            bytes: devs.map((d) => d.executor.deviceBytes().total),
          };
          for (let k = 0; k < steps; k++) row = s.step([k % 7]);
          const after = {
            alloc: engine.pipelineStats!.handoffAllocations,
            staged: engine.stats.programsStaged,
            bytes: devs.map((d) => d.executor.deviceBytes().total),
          };
          if (JSON.stringify(after) !== JSON.stringify(before))
            throw new Error(`decode allocated: ${JSON.stringify(before)} -> ${JSON.stringify(after)}`);
        };
        gate(6);
        expect(engine.pipelineStats!.handoffs).toBeGreaterThan(0);
        // Planted: a fresh hand-off buffer every step.
        (engine.decodeProgram(1) as PipelineProgram).allocateEveryStep = true;
        expect(() => gate(2)).toThrow(/decode allocated/);
      } finally {
        engine.close();
      }
    });

    test("--gpu-layers and the default placement: units and hand-offs per token", () => {
      const c = hfCase("llama3");
      const devs = [
        { name: "cpu", executor: createEvalExecutor() },
        { name: "gpu", executor: createEvalExecutor() },
      ];
      for (const [p, units] of [
        [placeAll(2, "gpu"), 1],
        [gpuLayers(1, 2, "gpu"), 2],
        [gpuLayers(0, 2, "gpu"), 1],
        [gpuLayers(99, 2, "gpu"), 1],
      ] as const) {
        const engine = Engine.load(c.model, { executor: devs[0]!.executor, devices: devs, placement: p, context: 40 });
        try {
          const r = engine.placementReport()!;
          expect(r.unitsPerToken).toBe(units);
          expect(r.handoffsPerToken).toBe(units - 1);
          expect(r.handoffBytesPerToken).toBe(64 * 4);
        } finally {
          engine.close();
        }
      }
    });
  },
);

/** The single-token decode graph of a model (its block cut). */
function probeGraph(dir: string): Graph {
  const m = LoadedModel.open(dir);
  try {
    return m.graph({ kind: "decode", context: 4, tokens: 1 });
  } finally {
    m.close();
  }
}

/** An executor whose weight source scales the tensors `pick` selects by 1 + 1e-4. */
function perturbing(inner: Executor, pick: (key: string) => boolean): Executor {
  return new Proxy(inner, {
    get(target, prop, recv) {
      if (prop === "bindWeights") {
        return (source: WeightSource) =>
          target.bindWeights((key, type) => {
            const d = source(key, type);
            if (!pick(key) || !(d instanceof Float32Array)) return d;
            return d.map((x) => x * (1 + 1e-4));
          });
      }
      const v = Reflect.get(target, prop, recv) as unknown;
      return typeof v === "function" ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
}

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
