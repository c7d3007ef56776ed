// Contractions whose epilogue reads other output elements (RoPE's partner within a head, the in-place KV-cache
// write) run as a cooperative block GEMV: programs compiled by graph-plan for cuda/wgpu/vulkan (decode, fused q/k/v
// epilogues) are run in the interpreter with poisoned fresh buffers and compared with graph-ir's float64 eval.

import { evaluate } from "@poot/graph-ir";
import type { Region } from "@poot/graph-plan";
import { compile, defaultTarget } from "@poot/graph-plan";
import { describe, expect, it } from "vitest";
import { interpretProgram, planKernel, synthCapsFrom } from "@poot/kernelgen";
import type { SynthCaps } from "@poot/kernelgen";
import { epilogueBlocking } from "../src/adapter/block-epilogue.js";
import { BASE, bindings, decoder } from "./decoder.js";
import type { Dims } from "./decoder.js";
import { Q4_0, Q8_0 } from "./formats.js";
import { expectClose, expectExact } from "./helpers.js";

type Kind = "cuda" | "wgpu" | "vulkan";

/** The contraction plans whose epilogue has a RoPE or an in-place cache write, with the kernel each gets. */
function neighbourPlans(prog: ReturnType<typeof compile>, caps: SynthCaps) {
  return prog.plans().flatMap((plan, i) => {
    const src = plan.kernel;
    if (
      src.provenance !== "synthesized" ||
      !["gemv", "gemm", "dequant-gemv", "dequant-gemm"].includes(src.request.kind)
    )
      return [];
    const epi = (src.request.params as { epilogue?: Region | null }).epilogue ?? null;
    if (epi === null || !epi.nodes.some((n) => n.op === "Rope" || n.op === "DynamicUpdateSlice")) return [];
    return [{ i, epi, k: planKernel(src, caps, `p${i}`) }];
  });
}

describe("block GEMV for neighbour-reading epilogues, end to end against eval", () => {
  const cases: [string, Dims, number, Kind, Partial<SynthCaps>][] = [
    ["cuda caps, f32 weights", BASE, 5, "cuda", {}],
    [
      "wgpu caps, bf16 weights, ragged K (hidden 40) and 3 heads of 6",
      { ...BASE, hidden: 40, heads: 3, kvHeads: 1, headDim: 6 },
      7,
      "wgpu",
      {},
    ],
    ["vulkan caps, bf16 weights", { ...BASE, wDtype: "bf16" }, 11, "vulkan", {}],
    [
      "cuda caps with 16-byte loads, bf16 weights, K = 256",
      { ...BASE, hidden: 256, wDtype: "bf16" },
      3,
      "cuda",
      { vectorLoads: true },
    ],
    [
      "cuda caps, Q8_0 weights kept packed (lanes split each block)",
      { ...BASE, hidden: 64, ffn: 64, wDtype: Q8_0 },
      4,
      "cuda",
      { vectorLoads: true },
    ],
    [
      "cuda caps, Q4_0 weights kept packed, 3 blocks a row",
      { ...BASE, hidden: 96, ffn: 64, wDtype: Q4_0 },
      6,
      "cuda",
      { vectorLoads: true },
    ],
    [
      "no subgroups (shared-memory lane sums), ragged K",
      { ...BASE, hidden: 36, headDim: 10, heads: 2, kvHeads: 2 },
      2,
      "wgpu",
      { subgroupSize: undefined },
    ],
    // Interleaved RoPE pairs (decision 1690): the partner is the neighbouring element, the block still whole heads.
    [
      "interleaved RoPE, cuda caps, Q8_0 weights kept packed",
      { ...BASE, hidden: 64, ffn: 64, wDtype: Q8_0, rope: "interleaved" },
      4,
      "cuda",
      { vectorLoads: true },
    ],
    [
      "interleaved RoPE, wgpu caps, ragged K, 3 heads of 6",
      { ...BASE, hidden: 40, heads: 3, kvHeads: 1, headDim: 6, rope: "interleaved" },
      7,
      "wgpu",
      {},
    ],
    [
      "interleaved RoPE, cuda caps split in two dispatches",
      { ...BASE, rope: "interleaved" },
      5,
      "cuda",
      { splitBlockGemv: true, computeUnits: 132 },
    ],
    // Split (decision 0807): blocks fewer than compute units -> a GEMV into the transient, then the epilogue per block.
    ["cuda caps split in two dispatches, f32 weights", BASE, 5, "cuda", { splitBlockGemv: true, computeUnits: 132 }],
    [
      "cuda caps split, 16-byte loads, bf16 weights, K = 256",
      { ...BASE, hidden: 256, wDtype: "bf16" },
      3,
      "cuda",
      { vectorLoads: true, splitBlockGemv: true, computeUnits: 132 },
    ],
    [
      "cuda caps split, Q8_0 weights kept packed",
      { ...BASE, hidden: 64, ffn: 64, wDtype: Q8_0 },
      4,
      "cuda",
      { vectorLoads: true, splitBlockGemv: true, computeUnits: 132 },
    ],
  ];
  for (const [label, d, pos, kind, extra] of cases) {
    it(label, () => {
      const g = decoder(d);
      const target = defaultTarget(kind);
      const base = synthCapsFrom(target.caps as never);
      const caps: SynthCaps = { ...base, ...extra };
      if ("subgroupSize" in extra && extra.subgroupSize === undefined)
        delete (caps as { subgroupSize?: number }).subgroupSize;
      // One block GEMV per contraction (the q/k/v group of decision 0402 has its own test, synth-grouped).
      const prog = compile(g, target, { mode: "decode", preferImported: false, horizontalFusion: "shared-epilogue" });
      // q (RoPE), k (RoPE + cache write), v (cache write): each is a block kernel staging accumulators in workgroup memory.
      const plans = neighbourPlans(prog, caps);
      expect(plans.length).toBeGreaterThanOrEqual(2);
      for (const { k, epi } of plans) {
        // Split: the first dispatch only computes dot products; the `then` dispatch stages them per block.
        expect(k.then !== undefined).toBe(extra.splitBlockGemv === true);
        const staging = k.then ?? k;
        if (k.then !== undefined) expect(k.kernel.shared.map((s) => s.name)).not.toContain("acc");
        expect(staging.kernel.shared.map((s) => s.name)).toContain("acc");
        const rope = epi.nodes.find((n) => n.op === "Rope");
        if (rope !== undefined) expect((rope.params as { style: string }).style).toBe(d.rope ?? "half");
        const acc = staging.kernel.shared.find((s) => s.name === "acc")!;
        // A block holds whole heads when RoPE reads the partner.
        if (rope !== undefined) expect((acc.length as number) % (rope.shape[rope.shape.length - 1] as number)).toBe(0);
        if (extra.vectorLoads === true)
          expect(k.kernel.buffers.find((b) => b.name === "in1")?.elem).toBe(
            typeof d.wDtype === "object" ? "u32" : "vec4<u32>",
          );
      }
      const bind = bindings(g, d, pos, 29);
      const run = interpretProgram(prog, bind, { caps }); // device buffers start poisoned (NaN)
      const ref = evaluate(g, bind);
      const want = ref.outputs.logits!.data;
      const scale = Math.max(...Array.from(want, Math.abs));
      expectClose(run.outputs.logits as Float32Array, want, scale, 2e-5);
      for (const key of ["k_cache", "v_cache"])
        expectClose(run.state[key] as Float32Array, ref.state[key]!.data, 1, 1e-5);
      expectExact(run.outputs.next as Int32Array, ref.outputs.next!.data);
    });
  }
});

describe("epilogueBlocking", () => {
  const acc = [1, 1, 16];
  const out = { root: 9, offset: 0, shape: [1, 4, 1, 4], strides: [16, 4, 4, 1], dtype: "f32", value: 0 } as never;
  const cosSin = { root: 3, offset: 0, shape: [1, 1, 1, 4], strides: [4, 4, 4, 1], dtype: "f32", value: 0 } as never;
  const ropeRegion = (perm: number[]): Region => ({
    nodes: [
      { op: "Reshape", args: [{ in: 0 }], params: {} as never, dtype: "f32", shape: [1, 1, 4, 4] },
      {
        op: "Transpose",
        args: [{ node: 0 }],
        params: { perm } as never,
        dtype: "f32",
        shape: perm.map((p) => [1, 1, 4, 4][p]!),
      },
      {
        op: "Rope",
        args: [{ node: 1 }, { in: 1 }, { in: 2 }],
        params: { style: "half", dtype: "f32" } as never,
        dtype: "f32",
        shape: perm.map((p) => [1, 1, 4, 4][p]!),
      },
    ],
    result: 2,
  });
  it("a head transpose of size-1 axes then RoPE: blocks of one head", () => {
    expect(epilogueBlocking(ropeRegion([0, 2, 1, 3]), 1, acc, [cosSin, cosSin], out)).toEqual({
      space: [1, 4, 1, 4],
      granule: 4,
    });
  });
  it("a transpose that reorders heads and dims is refused (reads would leave the block)", () => {
    const o = { ...(out as object), shape: [1, 1, 4, 4], strides: [16, 16, 4, 1] } as never;
    expect(epilogueBlocking(ropeRegion([0, 1, 3, 2]), 1, acc, [cosSin, cosSin], o)).toBeNull();
  });
  it("a slice of the accumulator is refused", () => {
    const r: Region = {
      nodes: [
        {
          op: "Slice",
          args: [{ in: 0 }],
          params: { start: [0, 0, 1], step: [1, 1, 1] } as never,
          dtype: "f32",
          shape: [1, 1, 15],
        },
      ],
      result: 0,
    };
    expect(
      epilogueBlocking(r, 1, acc, [], { ...(out as object), shape: [1, 1, 15], strides: [15, 15, 1] } as never),
    ).toBeNull();
  });
});
