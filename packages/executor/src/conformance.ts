// The conformance suite every backend runs (CONVENTIONS 7): small graphs checked step by step against
// graph-ir's `evaluate`, State kept across steps, capture/replay, lane copies and the typed errors.
import { evaluate, type HostData, type TensorData } from "@poot/graph-ir";
import { describe, expect, it } from "vitest";
import type { Executor, OutputData, StateSet } from "./contract.js";
import { conformanceCases, type ConformanceCase, type ConformanceDType } from "./conformance-cases.js";
import { ExecutorError } from "./errors.js";

export { conformanceCases, seededFloats, stored } from "./conformance-cases.js";
export type { ConformanceCase, ConformanceDType } from "./conformance-cases.js";

/** Options of {@link runConformance}. */
export interface ConformanceOptions {
  /** Weight storage dtypes the backend supports. */
  readonly dtypes: readonly ConformanceDType[];
  /** Max |Δ| / max(1, max |oracle|) allowed per output (default 1e-5; the eval executor passes 0). */
  readonly tolerance?: number;
  /** When set, the suite is skipped with this reason (e.g. "no CUDA device"). */
  readonly skip?: string;
}

/** Largest |a - b| relative to max(1, max |b|); integer outputs must be equal (tolerance 0). */
export function relativeError(actual: ArrayLike<number>, expected: ArrayLike<number>): number {
  if (actual.length !== expected.length) return Infinity;
  let scale = 1,
    err = 0;
  for (let i = 0; i < expected.length; i++) scale = Math.max(scale, Math.abs(expected[i]!));
  for (let i = 0; i < expected.length; i++) {
    const a = actual[i]!,
      e = expected[i]!;
    // Equal infinities and NaN-vs-NaN agree; anything else non-finite is an infinite error.
    if (a === e || (Number.isNaN(a) && Number.isNaN(e))) continue;
    err = Math.max(err, Math.abs(a - e) / scale);
    if (!Number.isFinite(err)) return Infinity;
  }
  return err;
}

function zeroState(c: ConformanceCase): Record<string, HostData> {
  const out: Record<string, HostData> = {};
  for (const s of c.graph.states)
    out[s.key] = new Float64Array(c.graph.values[s.input]!.shape.reduce((a, d) => a * d, 1));
  return out;
}

/** Runs one case on `exec` step by step, asserting (vitest `expect`) every output and state against the oracle. */
export function checkConformanceCase(exec: Executor, c: ConformanceCase, tol: number): void {
  exec.bindWeights((key) => c.weights[key]!);
  const prog = exec.stage(c.graph, { name: c.name });
  const state: StateSet | undefined = c.graph.states.length > 0 ? prog.createState() : undefined;
  let oracleState = zeroState(c);
  c.steps.forEach((slots, step) => {
    for (const [k, v] of Object.entries(slots)) prog.writeSlot(k, v);
    prog.run(state);
    const r = evaluate(c.graph, { consts: c.weights, slots, state: oracleState });
    for (const o of c.graph.outputs) {
      const got = prog.readOutput(o.name);
      const want: TensorData = r.outputs[o.name]!.data;
      expect(relativeError(got, want), `${c.name} step ${step} output ${o.name}`).toBeLessThanOrEqual(tol);
    }
    for (const s of c.graph.states) {
      expect(
        relativeError(state!.read(s.key), r.state[s.key]!.data),
        `${c.name} step ${step} state ${s.key}`,
      ).toBeLessThanOrEqual(tol);
    }
    oracleState = Object.fromEntries(Object.entries(r.state).map(([k, t]) => [k, t.data]));
  });
}

/** The oracle's second step: `s0` from zero State, then `s1` from the State it left. */
function twoSteps(c: ConformanceCase, s0: Record<string, HostData>, s1: Record<string, HostData>) {
  const r0 = evaluate(c.graph, { consts: c.weights, slots: s0, state: zeroState(c) });
  return evaluate(c.graph, {
    consts: c.weights,
    slots: s1,
    state: Object.fromEntries(Object.entries(r0.state).map(([k, t]) => [k, t.data])),
  });
}

function expectCode(fn: () => unknown, code: ExecutorError["code"]): void {
  let caught: unknown;
  try {
    fn();
  } catch (e) {
    caught = e;
  }
  expect(caught, `expected an ExecutorError "${code}"`).toBeInstanceOf(ExecutorError);
  expect((caught as ExecutorError).code).toBe(code);
}

/**
 * Registers the conformance suite for one backend with vitest: `makeExecutor` makes a fresh executor per
 * test. Call it at the top level of a test file: `runConformance("cpu", () => createCpuExecutor(), { dtypes: ["f32"] })`.
 */
export function runConformance(name: string, makeExecutor: () => Executor, options: ConformanceOptions): void {
  const tol = options.tolerance ?? 1e-5;
  const suite = options.skip === undefined ? describe : describe.skip;
  suite(`executor conformance: ${name}${options.skip !== undefined ? ` (skipped: ${options.skip})` : ""}`, () => {
    for (const d of options.dtypes) {
      for (const c of conformanceCases(d)) {
        it(`${c.name}: every step equals evaluate`, () => {
          const exec = makeExecutor();
          try {
            checkConformanceCase(exec, c, tol);
          } finally {
            exec.dispose();
          }
        });
      }
    }

    const stateCase = (): ConformanceCase =>
      conformanceCases(options.dtypes[0] ?? "f32").find((c) => c.name.startsWith("state"))!;

    it("capture then replay re-runs the step with the slots' new values against the captured State", () => {
      const exec = makeExecutor();
      try {
        const c = stateCase();
        exec.bindWeights((key) => c.weights[key]!);
        const prog = exec.stage(c.graph);
        const st = prog.createState();
        const [s0, s1] = [c.steps[0]!, c.steps[1]!];
        for (const [k, v] of Object.entries(s0)) prog.writeSlot(k, v);
        if (!exec.caps.capture) {
          expect(prog.capture(st)).toBe(false);
          return;
        }
        expect(prog.capture(st)).toBe(true);
        prog.replay();
        for (const [k, v] of Object.entries(s1)) prog.writeSlot(k, v);
        prog.replay();
        const r1 = twoSteps(c, s0, s1);
        expect(relativeError(prog.readOutput("acc"), r1.outputs.acc!.data)).toBeLessThanOrEqual(tol);
        expect(relativeError(st.read("cache"), r1.state.cache!.data)).toBeLessThanOrEqual(tol);
      } finally {
        exec.dispose();
      }
    });

    it("releaseWeights frees the weights; the next step reads them again and gives the same answer", (ctx) => {
      const exec = makeExecutor();
      try {
        if (exec.releaseWeights === undefined) return ctx.skip();
        const c = stateCase();
        let reads = 0;
        exec.bindWeights((key) => (reads++, c.weights[key]!));
        const prog = exec.stage(c.graph);
        const st = prog.createState();
        const [s0, s1] = [c.steps[0]!, c.steps[1]!];
        for (const [k, v] of Object.entries(s0)) prog.writeSlot(k, v);
        const replay = prog.capture(st);
        if (replay) prog.replay();
        else prog.run(st);
        const held = exec.deviceBytes().weights,
          read = reads;
        const freed = exec.releaseWeights(Object.keys(c.weights));
        expect(freed).toBeGreaterThan(0);
        expect(exec.deviceBytes().weights).toBeLessThanOrEqual(held - freed);
        expect(exec.releaseWeights(["no such weight"])).toBe(0);
        for (const [k, v] of Object.entries(s1)) prog.writeSlot(k, v);
        if (replay) prog.replay();
        else prog.run(st);
        expect(reads).toBeGreaterThan(read);
        const r1 = twoSteps(c, s0, s1);
        expect(relativeError(prog.readOutput("acc"), r1.outputs.acc!.data)).toBeLessThanOrEqual(tol);
        expect(relativeError(st.read("cache"), r1.state.cache!.data)).toBeLessThanOrEqual(tol);
      } finally {
        exec.dispose();
      }
    });

    it("copyLanes moves one sequence's State between sets; other lanes stay as they were", () => {
      const exec = makeExecutor();
      try {
        const c = stateCase();
        exec.bindWeights((key) => c.weights[key]!);
        const prog = exec.stage(c.graph);
        const a = prog.createState(),
          b = prog.createState();
        expect(a.lanes).toBe(2);
        for (const [k, v] of Object.entries(c.steps[0]!)) prog.writeSlot(k, v);
        prog.run(a);
        b.copyLanes(a, 1, 0);
        const src = a.read("cache"),
          dst = b.read("cache");
        const per = src.length / 2;
        expect(Array.from(dst.subarray(0, per))).toEqual(Array.from(src.subarray(per)));
        expect(Array.from(dst.subarray(per)).every((v) => v === 0)).toBe(true);
        expectCode(() => b.copyLanes(a, 1, 1, 2), "state-mismatch");
        b.zero();
        expect(Array.from(b.read("acc")).every((v) => v === 0)).toBe(true);
      } finally {
        exec.dispose();
      }
    });

    it("bad slot, state and output use are typed ExecutorErrors; device bytes are reported", () => {
      const exec = makeExecutor();
      try {
        const c = stateCase();
        const prog = exec.stage(c.graph, { name: "errors" });
        expectCode(() => prog.writeSlot("nope", [0]), "unknown-slot");
        expectCode(() => prog.writeSlot("pos", [0, 1]), "slot-mismatch");
        expectCode(() => prog.writeSlot("pos", [0.5]), "slot-mismatch");
        const st = prog.createState();
        expectCode(() => prog.run(st), "slot-unwritten");
        for (const [k, v] of Object.entries(c.steps[0]!)) prog.writeSlot(k, v);
        expectCode(() => prog.run(), "unknown-state");
        expectCode(() => prog.run(st), "unbound-weights");
        exec.bindWeights((key) => c.weights[key]!);
        prog.run(st);
        expectCode(() => prog.readOutput("nope"), "unknown-output");
        expectCode(() => st.read("nope"), "unknown-state");
        expectCode(() => st.write("cache", [1, 2, 3]), "state-mismatch");
        const bytes = exec.deviceBytes();
        expect(bytes.state).toBeGreaterThanOrEqual(4 * (2 * 8 * 4 + 2 * 4));
        expect(bytes.weights).toBeGreaterThanOrEqual(4 * 2);
        expect(bytes.total).toBe(bytes.weights + bytes.state + bytes.io);
      } finally {
        exec.dispose();
      }
    });
  });
}

/** Re-exported so a backend's test can compare its own outputs the way the suite does. */
export type { OutputData };
