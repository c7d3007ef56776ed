// An LM head wider than WebGPU's 65535 workgroups per grid axis (a Llama-3 vocabulary is 128256): the imported
// [N, K] GEMV launches one workgroup per column, so its grid must split over x and y. Logits and greedy ids on
// lavapipe against graph-ir's `evaluate`, run directly and through capture/replay.

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { relativeError, seededFloats, stored } from "@poot/executor/conformance";
import { Builder, evaluate, type Graph, type HostData } from "@poot/graph-ir";
import { compile, makeTarget } from "@poot/graph-plan";
import { createWgpuExecutor, wgpuLowering, type WgpuExecutor } from "@poot/backend-wgpu/executor";
import type { WgpuCaps } from "@poot/backend-wgpu";
import { openTestContext } from "./helpers.js";

const TOL = 1e-4;
// More columns than one grid axis holds, a short K so lavapipe stays fast.
const V = 70001,
  K = 16;

let why = "";
let exec: WgpuExecutor | undefined;
let caps: WgpuCaps | undefined;
beforeAll(async () => {
  const r = await openTestContext();
  if ("ctx" in r) {
    exec = createWgpuExecutor(r.ctx);
    caps = r.ctx.caps;
  } else why = r.reason;
});
afterAll(() => exec?.dispose());

/** x [1, K] → logits = x · Wᵀ (W a bf16 [V, K] head, HF layout) → greedy id. */
function lmHead(): { graph: Graph; weights: Record<string, HostData> } {
  const b = new Builder();
  const x = b.slot("Token", "x", "f32", [1, K]);
  const logits = b.linear(x, b.const("lm_head", "bf16", [V, K]));
  b.output("logits", logits);
  b.output("ids", b.argmax(logits, 1));
  return { graph: b.build(), weights: { lm_head: stored("bf16", seededFloats(11, V * K)) } };
}

describe(`LM head with ${V} output columns on WebGPU`, () => {
  it("imports the [N, K] GEMV and every column's logit and the greedy id equal evaluate, run and replayed", async (t) => {
    if (why !== "") return t.skip(why);
    const e = exec!;
    const { graph, weights } = lmHead();
    e.bindWeights((key) => weights[key]!);
    const prog = await e.stage(graph, { name: "wide_lm_head" });
    // The plans the staged program was lowered from: graph-plan's, for the device's lowering target.
    const target = wgpuLowering(caps!);
    expect(prog.lowered.key).toBeTypeOf("string");
    const kernels = compile(graph, makeTarget({ kind: "wgpu", caps: target.plan }), target.compile)
      .plans()
      .map((p) => p.kernel)
      .filter((k) => k.provenance === "imported")
      .map((k) => (k as { name: string }).name);
    expect(kernels).toContain("gemv_bf16_nk");
    for (const [i, seed] of [21, 22].entries()) {
      const slots = { x: seededFloats(seed, K) };
      prog.writeSlot("x", slots.x);
      if (i === 0) await prog.run();
      else {
        expect(await prog.capture()).toBe(true);
        await prog.replay();
      }
      const r = evaluate(graph, { consts: weights, slots, state: {} });
      const logits = await prog.readOutputAsync("logits");
      expect(logits.length).toBe(V);
      expect(relativeError(logits, r.outputs.logits!.data)).toBeLessThanOrEqual(TOL);
      expect(Array.from(await prog.readOutputAsync("ids"))).toEqual(Array.from(r.outputs.ids!.data));
    }
  });
});
