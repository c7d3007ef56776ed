// Blocks on two host devices (two eval executors, "a" and "b"): every HF fixture family and every GGUF fixture
// gives the single-device run's greedy ids and logits within 1e-6 when split across devices, and when a block
// moves at token 5 and back at token 10; the greedy ids are also transformers' (HF) — the oracle nobody here
// wrote. Each gate is shown failing on a planted violation.
import { createEvalExecutor } from "@poot/backend-reference";
import { Engine, gpuLayers, parsePlacement, placeAll, type PipelineProgram } from "@poot/runtime";
import { describe, expect, test } from "vitest";
import { assertSameAnswer, greedyRun } from "./blocks-helpers.js";
import {
  NO_FIXTURES,
  FIXTURES,
  HF,
  GGUF,
  TYPES,
  devices,
  split,
  type Case,
  hfCase,
  ggufCase,
  N,
  perturbing,
} from "./blocks-cases.js";

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
