// The Vulkan executor beyond the shared conformance suite: steps after the first allocate nothing and record
// nothing (one recording resubmitted), per-dispatch timestamps, independent StateSets of one program.

import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { Builder, evaluate, type HostData } from "@poot/graph-ir";
import { compile, defaultTarget } from "@poot/graph-plan";
import { conformanceCases, seededFloats } from "@poot/executor/conformance";
import { createVulkanExecutor, vulkanTarget, type VulkanDevice, type VulkanProgram } from "@poot/backend-vulkan";
import { noVulkan, openDevice, relErr } from "./helpers.js";

describe.skipIf(noVulkan !== undefined)(
  `Vulkan executor${noVulkan === undefined ? "" : ` (skipped: ${noVulkan})`}`,
  () => {
    let device: VulkanDevice;
    beforeAll(() => {
      device = openDevice();
    });
    afterAll(() => device?.dispose());

    test("after the first step, steps allocate no buffers and create no pipelines; timestamps cover every dispatch", () => {
      const exec = createVulkanExecutor({ device, timestamps: true });
      try {
        const c = conformanceCases("bf16").find((x) => x.name.startsWith("state"))!;
        exec.bindWeights((key) => c.weights[key]!);
        const prog = exec.stage(c.graph, { name: "state" }) as VulkanProgram;
        const st = prog.createState();
        const run = (s: number): void => {
          for (const [k, v] of Object.entries(c.steps[s % c.steps.length]!)) prog.writeSlot(k, v);
          prog.run(st);
          prog.readOutput("acc");
        };
        run(0);
        const bytes = device.bytes(),
          pipelines = device.pipelines.size,
          modules = device.pipelines.modulesCreated;
        for (let s = 1; s < 12; s++) run(s);
        expect(device.bytes()).toEqual(bytes);
        expect(device.pipelines.size).toBe(pipelines);
        expect(device.pipelines.modulesCreated).toBe(modules);
        const t = exec.device.timings(prog.recordingOf(st));
        if (device.info.timestampValidBits > 0) {
          // One timing per dispatch, plus the state copies recorded after them.
          expect(t!.length).toBeGreaterThanOrEqual(prog.dispatchesPerStep());
          t!.forEach((x) => expect(x.ns).toBeGreaterThanOrEqual(0));
        }
        expect(prog.lowered.fallbacks).toEqual([]);
        // One launch per planned dispatch: what `poot compile --explain` predicts is what runs.
        expect(prog.dispatchesPerStep()).toBe(prog.lowered.predicted.step);
      } finally {
        exec.dispose();
      }
    });

    test("two StateSets of one program evolve independently, each equal to its own evaluate chain", () => {
      const exec = createVulkanExecutor({ device });
      try {
        const c = conformanceCases("f32").find((x) => x.name.startsWith("state"))!;
        exec.bindWeights((key) => c.weights[key]!);
        const prog = exec.stage(c.graph);
        const sets = [prog.createState(), prog.createState()];
        const zero = (): Record<string, Float64Array> =>
          Object.fromEntries(
            c.graph.states.map((s) => [
              s.key,
              new Float64Array(c.graph.values[s.input]!.shape.reduce((a, d) => a * d, 1)),
            ]),
          );
        const oracle = [zero(), zero()];
        // Interleave: set 0 takes steps 0, 2, 4; set 1 takes steps 1, 3.
        c.steps.forEach((slots, step) => {
          const i = step % 2;
          for (const [k, v] of Object.entries(slots)) prog.writeSlot(k, v);
          prog.run(sets[i]);
          const r = evaluate(c.graph, { consts: c.weights, slots, state: oracle[i]! });
          oracle[i] = Object.fromEntries(Object.entries(r.state).map(([k, t]) => [k, t.data as Float64Array]));
          expect(relErr(prog.readOutput("acc"), r.outputs.acc!.data)).toBeLessThanOrEqual(1e-6);
        });
        for (const i of [0, 1]) expect(relErr(sets[i]!.read("cache"), oracle[i]!.cache!)).toBeLessThanOrEqual(1e-6);
      } finally {
        exec.dispose();
      }
    });

    test("StateSets made and dropped one after another reuse descriptor sets (sessions do not grow the pools)", () => {
      const exec = createVulkanExecutor({ device });
      try {
        const c = conformanceCases("f32").find((x) => x.name.startsWith("state"))!;
        exec.bindWeights((key) => c.weights[key]!);
        const prog = exec.stage(c.graph);
        for (const [k, v] of Object.entries(c.steps[0]!)) prog.writeSlot(k, v);
        const pools0 = device.pipelines.poolCount;
        // 300 sessions x 3 descriptor sets each is past one pool's 256 sets unless freed sets are reused.
        for (let i = 0; i < 300; i++) {
          const st = prog.createState();
          prog.run(st);
          st.dispose();
        }
        expect(device.pipelines.poolCount - pools0).toBeLessThanOrEqual(1);
      } finally {
        exec.dispose();
      }
    });

    test("graph-plan Programs stage directly: one compiled for another target is recompiled from its source", () => {
      for (const target of [defaultTarget("cpu"), vulkanTarget(device)]) {
        const c = conformanceCases("bf16").find((x) => x.name.startsWith("state"))!;
        const program = compile(c.graph, target);
        const exec = createVulkanExecutor({ device });
        try {
          exec.bindWeights((key) => c.weights[key]!);
          const prog = exec.stage(program, { name: c.name }) as VulkanProgram;
          // Reused only when compiled for exactly this device's target (then nothing is compiled again).
          expect(prog.lowered.timings.compileMs === 0).toBe(target.kind === "vulkan");
          const st = prog.createState();
          let oracle: Record<string, HostData> = Object.fromEntries(
            c.graph.states.map((s) => [
              s.key,
              new Float64Array(c.graph.values[s.input]!.shape.reduce((a, d) => a * d, 1)),
            ]),
          );
          for (const slots of c.steps) {
            for (const [k, v] of Object.entries(slots)) prog.writeSlot(k, v);
            prog.run(st);
            const r = evaluate(c.graph, { consts: c.weights, slots, state: oracle });
            expect(relErr(prog.readOutput("colsum"), r.outputs.colsum!.data)).toBeLessThanOrEqual(1e-5);
            expect(relErr(st.read("cache"), r.state.cache!.data)).toBeLessThanOrEqual(1e-5);
            oracle = Object.fromEntries(Object.entries(r.state).map(([k, t]) => [k, t.data]));
          }
        } finally {
          exec.dispose();
        }
      }
    });

    test("bind-phase plans (equations over weights only) run once per weight binding, not per step; validation stays quiet", () => {
      const b = new Builder();
      const x = b.slot("Token", "x", "f32", [4, 8]);
      const w = b.f32(b.const("w", "f32", [8, 16]));
      b.output("y", b.matmul(x, b.add(b.mul(w, w), 1)));
      const g = b.build();
      const exec = createVulkanExecutor({ device });
      try {
        const run = (weights: Float32Array, steps: number): void => {
          exec.bindWeights(() => weights);
          for (let s = 0; s < steps; s++) {
            const xs = seededFloats(40 + s, 32);
            prog.writeSlot("x", xs);
            prog.run();
            const want = evaluate(g, { consts: { w: weights }, slots: { x: xs }, state: {} }).outputs.y!.data;
            expect(relErr(prog.readOutput("y"), want)).toBeLessThanOrEqual(1e-5);
          }
        };
        const prog = exec.stage(g, { name: "bind-phase" }) as VulkanProgram;
        const bind = prog.lowered.launches.length - prog.dispatchesPerStep();
        expect([bind, prog.dispatchesPerStep()]).toEqual([prog.lowered.predicted.bind, prog.lowered.predicted.step]);
        expect(bind).toBeGreaterThan(0);
        const d0 = exec.dispatchesSubmitted();
        run(seededFloats(3, 128), 3);
        // Three steps: the bind-phase launches once, the step's launches three times.
        expect(exec.dispatchesSubmitted() - d0).toBe(bind + 3 * prog.dispatchesPerStep());
        // New weights: the bind phase runs again (once), on the new values.
        const d1 = exec.dispatchesSubmitted();
        run(seededFloats(4, 128), 2);
        expect(exec.dispatchesSubmitted() - d1).toBe(bind + 2 * prog.dispatchesPerStep());
        expect(device.instance.errors()).toEqual([]);
      } finally {
        exec.dispose();
      }
    });
  },
);
