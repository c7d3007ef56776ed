// kernelgen's flash-decode attention as the CUDA executor synthesizes it at Llama-3.2-1B decode shapes (32 heads,
// 8 kv heads, head dim 64, bf16 head-major cache): the split partial kernel (a warp per key on these caps, decision
// 0807) and its combine lower to PTX and ptxas accepts both (skipped, saying so, without ptxas).
import { attentionSplits, synthesizeAttention, type SynthCaps } from "@poot/kernelgen";
import { describe, expect, it } from "vitest";
import { expectPtxasAccepts } from "../test/ptx.js";

const caps: SynthCaps = {
  maxWorkgroup: 1024,
  subgroupSize: 32,
  sharedBytes: 49152,
  vectorLoads: true,
  computeUnits: 132,
  splitAttention: true,
};

describe("kernelgen flash-decode attention, lowered to PTX", () => {
  it("splits a 4096-key cache 9 ways on 132 SMs; both kernels assemble with ptxas for sm_80 and sm_90", async () => {
    const splits = attentionSplits(32, 4096, 132);
    expect(splits).toBe(9);
    const s = synthesizeAttention(
      {
        name: "attn",
        queries: 1,
        heads: 32,
        kvHeads: 8,
        headDim: 64,
        keys: 4096,
        scale: 0.125,
        mask: "causal",
        kvLayout: "hsd",
        qDtype: "bf16",
        kvDtype: "bf16",
        outDtype: "bf16",
        splits,
      },
      caps,
    );
    expect(s.grid[0]).toBe(32 * 9);
    expect(s.split?.combine.grid[0]).toBe(32);
    expect(s.kernel.shared.map((x) => x.name)).not.toContain("qs"); // the warp-per-key kernel keeps q in registers
    for (const k of [s.kernel, s.split!.combine.kernel]) {
      await expectPtxasAccepts(k);
    }
  });
});
