// What a ROCm GPU's programs are lowered for (graph-plan's ROCM_ARCHS by gcnArchName), and the code object builder's
// typed failures: llc's own message for IR it rejects, naming the kernel and GPU.
import { CodeObjectBuilder, RocmError, rocmLowering, ROCM_GPUS } from "@poot/backend-rocm";
import { describe, expect, test } from "vitest";

let noTools: string | undefined;
try {
  new CodeObjectBuilder().tools();
} catch (e) {
  noTools = (e as Error).message;
}

describe("rocmLowering", () => {
  test("CDNA GPUs plan wave64 with MFMA, RDNA3 wave32 with WMMA; codegen gets the matrix units", () => {
    expect(ROCM_GPUS).toEqual(["gfx1100", "gfx90a", "gfx942"]);
    for (const [gpu, lanes, layout] of [
      ["gfx90a", 64, "mfma"],
      ["gfx942:sramecc+:xnack-", 64, "mfma"],
      ["gfx1100", 32, "wmma"],
    ] as const) {
      const t = rocmLowering(gpu);
      expect([t.kind, t.language, t.plan.subgroupSize, t.codegen.subgroupSize]).toEqual([
        "rocm",
        "amdgpu",
        lanes,
        lanes,
      ]);
      expect(t.codegen.matrixShapes?.map((s) => `${s.m}x${s.n}x${s.k} ${s.input} ${s.layout}`)).toEqual([
        `16x16x16 f16 ${layout}`,
        `16x16x16 bf16 ${layout}`,
      ]);
      expect(t.synth.matrixShapes).toEqual(t.plan.matrixShapes);
    }
  });

  test("a GPU the backend plans nothing for is no_code_object naming it and the supported ones", () => {
    let err: unknown;
    try {
      rocmLowering("gfx1030");
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(RocmError);
    expect((err as RocmError).code).toBe("no_code_object");
    expect((err as RocmError).context).toEqual({ arch: "gfx1030", available: ["gfx1100", "gfx90a", "gfx942"] });
  });
});

describe.skipIf(noTools !== undefined)(`CodeObjectBuilder${noTools ? ` (skipped: ${noTools})` : ""}`, () => {
  const ir = (body: string) =>
    `target triple = "amdgcn-amd-amdhsa"\ndefine amdgpu_kernel void @k(ptr addrspace(1) %p) {\n${body}\n  ret void\n}\n`;
  test("builds an ELF code object, kept by (IR, GPU)", () => {
    const b = new CodeObjectBuilder();
    const co = b.build(ir("  store i32 1, ptr addrspace(1) %p"), "gfx942");
    expect([...co.subarray(0, 4)]).toEqual([0x7f, 0x45, 0x4c, 0x46]);
    expect(b.build(ir("  store i32 1, ptr addrspace(1) %p"), "gfx942")).toBe(co);
  });
  test("planted: IR llc rejects is bad_code_object with llc's message, naming the kernel and GPU", () => {
    let err: unknown;
    try {
      new CodeObjectBuilder().build(ir("  store i32 %undefined, ptr addrspace(1) %p"), "gfx1100", "planted");
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(RocmError);
    expect((err as RocmError).code).toBe("bad_code_object");
    expect((err as RocmError).message).toMatch(/^kernel planted: \S*llc\S* failed for gfx1100: .*undefined/);
  });
});
