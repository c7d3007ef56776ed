// The executor conformance cases of @poot/executor on the WebGPU executor (lavapipe): every step of every
// case against graph-ir's `evaluate`, then capture/replay, lane copies and the typed errors; reads awaited.

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ExecutorError } from "@poot/executor";
import { conformanceCases, relativeError, type ConformanceCase } from "@poot/executor/conformance";
import { evaluate, type HostData } from "@poot/graph-ir";
import { createWgpuExecutor, type WgpuExecutor } from "@poot/backend-wgpu/executor";
import type { WgpuContext } from "@poot/backend-wgpu";
import { openTestContext } from "./helpers.js";

// f32 compute on the device against float64 rounded per dtype: summation order and exp/tanh differ slightly.
const TOL = 1e-5;

let why = "";
beforeAll(async () => {
  const r = await openTestContext();
  if ("ctx" in r) r.ctx.dispose();
  else why = r.reason;
});

const execs: WgpuExecutor[] = [];
const contexts = new WeakMap<WgpuExecutor, WgpuContext>();
async function exec(): Promise<WgpuExecutor> {
  const r = await openTestContext();
  if (!("ctx" in r)) throw new Error(r.reason);
  const e = createWgpuExecutor(r.ctx);
  contexts.set(e, r.ctx);
  execs.push(e);
  return e;
}
afterAll(() => execs.forEach((e) => e.dispose()));

function zeroState(c: ConformanceCase): Record<string, HostData> {
  const out: Record<string, HostData> = {};
  for (const s of c.graph.states)
    out[s.key] = new Float64Array(c.graph.values[s.input]!.shape.reduce((a, d) => a * d, 1));
  return out;
}

async function codeOf(p: Promise<unknown> | (() => unknown)): Promise<string> {
  let caught: unknown;
  try {
    await (typeof p === "function" ? p() : p);
  } catch (e) {
    caught = e;
  }
  expect(caught).toBeInstanceOf(ExecutorError);
  return (caught as ExecutorError).code;
}

describe("executor conformance on WebGPU", () => {
  for (const d of ["f32", "f16", "bf16"] as const) {
    for (const c of conformanceCases(d)) {
      it(`${c.name}: every step equals evaluate`, async (t) => {
        if (why !== "") return t.skip(why);
        const e = await exec();
        e.bindWeights((key) => c.weights[key]!);
        const prog = await e.stage(c.graph, { name: c.name });
        const state = c.graph.states.length > 0 ? await prog.createState() : undefined;
        let oracle = zeroState(c);
        for (const [step, slots] of c.steps.entries()) {
          for (const [k, v] of Object.entries(slots)) prog.writeSlot(k, v);
          await prog.run(state);
          const r = evaluate(c.graph, { consts: c.weights, slots, state: oracle });
          for (const o of c.graph.outputs)
            expect(
              relativeError(await prog.readOutputAsync(o.name), r.outputs[o.name]!.data),
              `${c.name} step ${step} output ${o.name}`,
            ).toBeLessThanOrEqual(TOL);
          for (const s of c.graph.states)
            expect(
              relativeError(await state!.readAsync(s.key), r.state[s.key]!.data),
              `${c.name} step ${step} state ${s.key}`,
            ).toBeLessThanOrEqual(TOL);
          oracle = Object.fromEntries(Object.entries(r.state).map(([k, v]) => [k, v.data]));
        }
      });
    }
  }

  const stateCase = (): ConformanceCase => conformanceCases("f32").find((c) => c.name.startsWith("state"))!;

  it("capture then replay re-runs the step with the slots' new values against the captured State", async (t) => {
    if (why !== "") return t.skip(why);
    const e = await exec();
    const c = stateCase();
    e.bindWeights((key) => c.weights[key]!);
    const prog = await e.stage(c.graph);
    const st = await prog.createState();
    const [s0, s1] = [c.steps[0]!, c.steps[1]!];
    for (const [k, v] of Object.entries(s0)) prog.writeSlot(k, v);
    expect(await prog.capture(st)).toBe(true);
    // Requests run on this thread's promise chain: let the capture's finish before counting.
    await e.device.syncAsync();
    const before = contexts.get(e)!.stats();
    await prog.replay();
    for (const [k, v] of Object.entries(s1)) prog.writeSlot(k, v);
    await prog.replay();
    const r0 = evaluate(c.graph, { consts: c.weights, slots: s0, state: zeroState(c) });
    const r1 = evaluate(c.graph, {
      consts: c.weights,
      slots: s1,
      state: Object.fromEntries(Object.entries(r0.state).map(([k, v]) => [k, v.data])),
    });
    expect(relativeError(await prog.readOutputAsync("acc"), r1.outputs.acc!.data)).toBeLessThanOrEqual(TOL);
    expect(relativeError(await st.readAsync("cache"), r1.state.cache!.data)).toBeLessThanOrEqual(TOL);
    // Replays made no buffer, pipeline or bind group (reads made their staging buffers, not counted).
    expect(contexts.get(e)!.stats()).toEqual(before);
  });

  it("copyLanes moves one sequence's State between sets; other lanes stay as they were", async (t) => {
    if (why !== "") return t.skip(why);
    const e = await exec();
    const c = stateCase();
    e.bindWeights((key) => c.weights[key]!);
    const prog = await e.stage(c.graph);
    const a = await prog.createState(),
      b = await prog.createState();
    expect(a.lanes).toBe(2);
    for (const [k, v] of Object.entries(c.steps[0]!)) prog.writeSlot(k, v);
    await prog.run(a);
    await b.copyLanes(a, 1, 0);
    const src = await a.readAsync("cache"),
      dst = await b.readAsync("cache");
    const per = src.length / 2;
    expect(Array.from(dst.subarray(0, per))).toEqual(Array.from(src.subarray(per)));
    expect(Array.from(dst.subarray(per)).every((v) => v === 0)).toBe(true);
    expect(await codeOf(() => b.copyLanes(a, 1, 1, 2))).toBe("state-mismatch");
    b.zero();
    expect(Array.from(await b.readAsync("acc")).every((v) => v === 0)).toBe(true);
  });

  it("bad slot, state and output use are typed ExecutorErrors; device bytes are reported", async (t) => {
    if (why !== "") return t.skip(why);
    const e = await exec();
    const c = stateCase();
    const prog = await e.stage(c.graph, { name: "errors" });
    expect(await codeOf(() => prog.writeSlot("nope", [0]))).toBe("unknown-slot");
    expect(await codeOf(() => prog.writeSlot("pos", [0, 1]))).toBe("slot-mismatch");
    expect(await codeOf(() => prog.writeSlot("pos", [0.5]))).toBe("slot-mismatch");
    const st = await prog.createState();
    expect(await codeOf(() => prog.run(st))).toBe("slot-unwritten");
    for (const [k, v] of Object.entries(c.steps[0]!)) prog.writeSlot(k, v);
    expect(await codeOf(() => prog.run())).toBe("unknown-state");
    expect(await codeOf(() => prog.run(st))).toBe("unbound-weights");
    e.bindWeights((key) => c.weights[key]!);
    await prog.run(st);
    expect(await codeOf(() => prog.readOutput("nope"))).toBe("unknown-output");
    expect(await codeOf(() => st.read("nope"))).toBe("unknown-state");
    expect(await codeOf(() => st.write("cache", [1, 2, 3]))).toBe("state-mismatch");
    const bytes = e.deviceBytes();
    expect(bytes.state).toBeGreaterThanOrEqual(4 * (2 * 8 * 4 + 2 * 4));
    expect(bytes.weights).toBeGreaterThanOrEqual(4 * 2);
    expect(bytes.total).toBe(bytes.weights + bytes.state + bytes.io);
  });
});
