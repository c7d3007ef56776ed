// The fused step protocol on a miniature decode graph, against graph-ir's evaluate: a fused region gives the same
// logits bits as one region per dispatch; decode allocates nothing after warm-up (a planted allocation is seen);
// the phase-order check passes on the real protocol and catches a planted early publish; the step profile labels and
// times every phase.
import { CpuError, createCpuExecutor, type CpuExecutor } from "@poot/backend-cpu";
import { relativeError } from "@poot/executor/conformance";
import { evaluate } from "@poot/graph-ir";
import { describe, expect, test } from "vitest";
import { S, V, decodeGraph, decodeWeights, stepSlots } from "./decode-graph.js";

const graph = decodeGraph();
const weights = decodeWeights();

/** Runs `steps` decode steps on a fresh executor; returns each step's logits. */
function decode(exec: CpuExecutor, steps: number): Float32Array[] {
  try {
    exec.bindWeights((key) => weights[key]!);
    const p = exec.stage(graph, { name: "decode" });
    const st = p.createState();
    const out: Float32Array[] = [];
    for (let t = 0; t < steps; t++) {
      const s = stepSlots(t);
      p.writeSlot("token", s.token);
      p.writeSlot("pos", s.pos);
      p.writeSlot("mask", s.mask);
      p.run(st);
      out.push(p.readOutput("logits") as Float32Array);
    }
    return out;
  } finally {
    exec.dispose();
  }
}

/** The oracle: graph-ir's evaluate, state carried across steps. */
function reference(steps: number): Float64Array[] {
  let k: Float64Array = new Float64Array(S * 64),
    v: Float64Array = new Float64Array(S * 64);
  const out: Float64Array[] = [];
  for (let t = 0; t < steps; t++) {
    const r = evaluate(graph, { consts: weights, slots: stepSlots(t), state: { k, v } });
    k = r.state["k"]!.data as Float64Array;
    v = r.state["v"]!.data as Float64Array;
    out.push(r.outputs["logits"]!.data as Float64Array);
  }
  return out;
}

describe("the fused step region", () => {
  test("gives the same logits bits as one region per dispatch, and both match evaluate", () => {
    const fused = decode(createCpuExecutor({ threads: 2 }), 6);
    const split = decode(createCpuExecutor({ threads: 2, fused: false }), 6);
    const ref = reference(6);
    for (let t = 0; t < 6; t++) {
      expect(relativeError(fused[t]!, ref[t]!), `step ${t}`).toBeLessThanOrEqual(1e-5);
      expect(Array.from(new Uint32Array(fused[t]!.buffer)), `step ${t} bits`).toEqual(
        Array.from(new Uint32Array(split[t]!.buffer)),
      );
    }
  });

  test("the phase-order check holds on every step of the real protocol", () => {
    const got = decode(createCpuExecutor({ threads: 2, checkPhaseOrder: true }), 4);
    const ref = reference(4);
    got.forEach((g, t) => expect(relativeError(g, ref[t]!)).toBeLessThanOrEqual(1e-5));
  });

  test("a phase published before its predecessor completed fails the phase-order check (planted)", () => {
    for (const threads of [1, 2]) {
      let err: unknown;
      try {
        decode(createCpuExecutor({ threads, checkPhaseOrder: true, plantEarlyPublish: true }), 2);
      } catch (e) {
        err = e;
      }
      expect(err, `${threads} thread(s)`).toBeInstanceOf(CpuError);
      expect((err as CpuError).code).toBe("phase-order");
    }
  });
});

describe("decode allocates nothing after warm-up", () => {
  /** Counter and memory deltas over 100 replayed decode steps after 3 warm-up steps; logits of the last step. */
  function hundredSteps(plantAllocation: boolean): {
    growths: number;
    blocks: number;
    arrays: number;
    bytes: number;
    logits: Float32Array;
    last: number;
  } {
    const exec = createCpuExecutor({ threads: 2, plantAllocation });
    try {
      exec.bindWeights((key) => weights[key]!);
      const p = exec.stage(graph, { name: "decode" });
      const st = p.createState();
      const token = new Int32Array(1),
        pos = new Int32Array(1),
        mask = new Float32Array(S).fill(-1e9);
      const logits = new Float32Array(V);
      const step = (t: number): void => {
        // Positions wrap inside the cache; the mask admits what has been written.
        const at = t % S;
        token[0] = (t * 37 + 5) % V;
        pos[0] = at;
        if (at === 0) mask.fill(-1e9);
        mask[at] = 0;
        p.writeSlot("token", token);
        p.writeSlot("pos", pos);
        p.writeSlot("mask", mask);
        p.replay();
        p.readOutput("logits", logits);
      };
      p.writeSlot("token", token);
      p.writeSlot("pos", pos);
      p.writeSlot("mask", mask);
      p.capture(st);
      for (let t = 0; t < 3; t++) step(t);
      const c0 = exec.counters(),
        b0 = exec.memory.memory.buffer.byteLength;
      for (let t = 3; t < 103; t++) step(t);
      const c1 = exec.counters();
      return {
        growths: c1.memoryGrowths - c0.memoryGrowths,
        blocks: c1.blocks - c0.blocks,
        arrays: c1.hostArrays - c0.hostArrays,
        bytes: exec.memory.memory.buffer.byteLength - b0,
        logits,
        last: 102,
      };
    } finally {
      exec.dispose();
    }
  }

  test("100 replayed steps: no memory growth, no blocks, no typed arrays; the logits are still right", () => {
    const r = hundredSteps(false);
    expect({ growths: r.growths, blocks: r.blocks, arrays: r.arrays, bytes: r.bytes }).toEqual({
      growths: 0,
      blocks: 0,
      arrays: 0,
      bytes: 0,
    });
    expect(r.logits.some((x) => x !== 0)).toBe(true);
  });

  test("a planted per-step allocation shows up in the counters", () => {
    const r = hundredSteps(true);
    expect(r.arrays).toBe(100);
  });
});

describe("the step profile (option profile) and the claims per thread", () => {
  test("labels every phase of the step; each thread's busy time fits in the phase's wall time; results unchanged", () => {
    const exec = createCpuExecutor({ threads: 2, profile: true, claimsPerThread: 3 });
    const holder: { plans: number; phases: ReturnType<CpuExecutor["takeProfile"]> } = { plans: 0, phases: null };
    try {
      exec.bindWeights((key) => weights[key]!);
      const p = exec.stage(graph, { name: "decode" });
      const st = p.createState();
      const ref = reference(3);
      for (let t = 0; t < 3; t++) {
        const s = stepSlots(t);
        p.writeSlot("token", s.token);
        p.writeSlot("pos", s.pos);
        p.writeSlot("mask", s.mask);
        p.run(st);
        expect(relativeError(p.readOutput("logits") as Float32Array, ref[t]!)).toBeLessThanOrEqual(1e-5);
      }
      holder.phases = exec.takeProfile();
      holder.plans = p.dispatchesPerStep();
    } finally {
      exec.dispose();
    }
    const phases = holder.phases!;
    expect(phases.filter((x) => x.label !== "copy").length).toBe(holder.plans);
    for (const x of phases) {
      expect(x.label).toMatch(/^(copy|\w+\/[\w-]+( native)? \d+x\d+x\d+)$/);
      expect(x.busy.length).toBe(2);
      // Both clocks are absolute (timeOrigin + now); 0.05 ms of slack for their rounding.
      for (const b of x.busy) expect(b).toBeLessThanOrEqual(x.wall + 0.05);
    }
    expect(phases.every((x) => x.wall > 0)).toBe(true);
    expect(phases.reduce((a, x) => a + x.busy[0]! + x.busy[1]!, 0)).toBeGreaterThan(0);
  });

  test("without the option there is no profile; a bad claimsPerThread is a typed error", () => {
    const exec = createCpuExecutor({ threads: 1 });
    try {
      expect(exec.takeProfile()).toBeNull();
    } finally {
      exec.dispose();
    }
    for (const claimsPerThread of [0, 1.5])
      expect(() => createCpuExecutor({ threads: 1, claimsPerThread })).toThrow(
        /claimsPerThread must be a positive integer/,
      );
  });
});
