// Packed GGUF decode on the CUDA executor's caps, checked here without a GPU: every contraction of a one-token
// decode step with packed weights (Q8_0; Q4_K and Q6_K in the Q4_K_M file) is planned to a warp-per-row kernel that
// reads the blocks packed (decision 0806). The q/k/v projections carry RoPE and KV-cache-write epilogues; before
// 0806 they fell back to one thread per output with the dot product inline (Q8_0 decode of a Llama-3.2-1B shape:
// 73 ms a token on the H200). Numerics are checked on the device (bench/cuda-fixtures.gpu.ts).
import * as path from "node:path";
import { lowerPtx, validatePtx } from "@poot/codegen";
import { cudaCaps, planCapsOf, synthCapsOf } from "@poot/backend-cuda";
import type { CudaDeviceInfo } from "@poot/backend-cuda";
import type { CudaContext } from "@poot/backend-cuda";
import { isPacked } from "@poot/graph-ir";
import { compile, makeTarget, type Region } from "@poot/graph-plan";
import { planKernel } from "@poot/kernelgen";
import { LoadedModel } from "@poot/models";
import { describe, expect, test } from "vitest";
import { fixture, needFixture } from "@poot/testkit";

const missing = needFixture("gguf/llama3-w256/model-Q8_0.gguf", "gguf/llama3-w256/model-Q4_K_M.gguf");
const dir = fixture("gguf/llama3-w256");
const skip = missing === undefined ? "" : ` (skipped: ${missing})`;
const info = {
  computeCapability: [9, 0],
  maxThreadsPerBlock: 1024,
  warpSize: 32,
  sharedBytesPerBlock: 49152,
  multiprocessors: 132,
  totalMemoryBytes: 2 ** 37,
};
const caps = planCapsOf({ device: { info } } as unknown as CudaContext);
// As CudaProgram.stage sets them.
const synth = synthCapsOf(caps);

describe.skipIf(skip !== "")(`packed decode contractions on the CUDA caps${skip}`, () => {
  for (const type of ["Q8_0", "Q4_K_M"]) {
    test(`${type}: every packed contraction is a warp-per-row kernel; RoPE / KV-write epilogues stage a block in workgroup memory`, () => {
      const m = LoadedModel.open(path.join(dir, `model-${type}.gguf`));
      const g = m.graph({ kind: "decode", context: 32, tokens: 1, paged: { pageSize: 16, pages: 4, lanes: 1 } });
      // A step of at most 8 tokens compiles with contraction epilogues of any shape (CudaExecutor's default).
      const prog = compile(g, makeTarget({ kind: "cuda", caps }), { mode: "decode", contractionEpilogues: "any" });
      const formats = new Set<string>();
      let blocked = 0;
      prog.plans().forEach((p, i) => {
        const src = p.kernel;
        if (src.provenance !== "synthesized" || !["gemv", "dequant-gemv"].includes(src.request.kind)) return;
        // A horizontal q/k/v group (decision 0402) is one kernel serving its members' requests.
        const members = (src.request.group ?? [src.request]).filter((r) => isPacked(r.inputs[1]!.dtype));
        if (members.length === 0) return;
        const k = planKernel(src, synth, `p${i}`);
        expect(k.subgroupSize, `plan ${i} (${p.op}) is a warp-per-row kernel`).toBe(32);
        for (const r of members) {
          const B = r.inputs[1]!;
          if (isPacked(B.dtype)) formats.add(B.dtype.packed.name);
          const epi = (r.params as { epilogue?: Region | null }).epilogue ?? null;
          if (epi !== null && epi.nodes.some((n) => n.op === "Rope" || n.op === "DynamicUpdateSlice")) {
            // Few blocks (a small model's heads): a GEMV into the transient, then the per-block epilogue (0807).
            expect(
              (k.then ?? k).kernel.shared.map((s) => s.name),
              `plan ${i} stages its block`,
            ).toContain("acc");
            blocked++;
          }
        }
      });
      // q (RoPE), k (RoPE + cache write), v (cache write) in each of the fixture's layers.
      expect(blocked).toBeGreaterThanOrEqual(3);
      if (type === "Q4_K_M") expect([...formats].sort()).toEqual(expect.arrayContaining(["q4_k", "q6_k"]));
    });
  }

  test("every kernel of the Q4_K_M decode step (split block GEMVs, warp-per-key attention) assembles with ptxas for sm_90", async () => {
    const m = LoadedModel.open(path.join(dir, "model-Q4_K_M.gguf"));
    const g = m.graph({ kind: "decode", context: 32, tokens: 1, paged: { pageSize: 16, pages: 4, lanes: 1 } });
    const prog = compile(g, makeTarget({ kind: "cuda", caps }), { mode: "decode", contractionEpilogues: "any" });
    const kernels = prog.plans().flatMap((p, i) => {
      if (p.kernel.provenance === "none") return [];
      const k = planKernel(p.kernel, synth, `p${i}`);
      return k.then === undefined ? [k.kernel] : [k.kernel, k.then.kernel];
    });
    const seen = new Map<string, string>();
    for (const k of kernels) {
      const text = lowerPtx(k, cudaCaps(info as unknown as CudaDeviceInfo), { arch: "sm_90" }).text!;
      const body = text.replace(/\b[A-Za-z_][A-Za-z0-9_]*_p\d+[A-Za-z0-9_]*/g, "K"); // layers repeat: assemble each kernel once
      if (seen.has(body)) continue;
      const r = await validatePtx(text, { arch: "sm_90" });
      if (r.status === "unavailable") {
        console.log(`ptxas check skipped: ${r.reason}`);
        return;
      }
      seen.set(body, r.status === "ok" ? "ok" : `${k.name}: ${r.message}`);
    }
    expect([...seen.values()].filter((v) => v !== "ok")).toEqual([]);
    expect(seen.size).toBeGreaterThan(5);
    expect(kernels.some((k) => k.name.endsWith("_epilogue"))).toBe(true); // the split block GEMVs' second dispatch
  }, 120_000);
});
