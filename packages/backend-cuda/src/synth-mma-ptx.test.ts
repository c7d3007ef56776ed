// kernelgen's tensor-core GEMM as the CUDA executor now gets it (planCapsOf lists mma.sync m16n8k16 from sm_80,
// decision 0805): at a Llama-3.2-1B prefill shape the request adapter picks it, its PTX issues mma.sync, and ptxas
// accepts it for sm_80 and sm_90 (skipped, saying so, without ptxas).
import { mmaGemmApplies, synthCapsFrom, synthesizeMmaGemm } from "@poot/kernelgen";
import { describe, expect, it } from "vitest";
import { expectPtxasAccepts } from "../test/ptx.js";
import type { CudaDeviceInfo } from "./device.js";
import { planCapsOf } from "./executor/plan-caps.js";
import type { CudaContext } from "./context.js";

const info = {
  computeCapability: [9, 0],
  maxThreadsPerBlock: 1024,
  warpSize: 32,
  sharedBytesPerBlock: 49152,
  multiprocessors: 132,
  totalMemoryBytes: 2 ** 37,
} as unknown as CudaDeviceInfo;
const caps = synthCapsFrom(planCapsOf({ device: { info } } as unknown as CudaContext));
const req = {
  name: "gemm_mma",
  M: 64,
  N: 2048,
  K: 2048,
  aDtype: "f32" as const,
  weight: { dtype: "bf16" as const, layout: "nk" as const },
};

describe("tensor-core GEMM on the CUDA caps, lowered to PTX", () => {
  it("is chosen for bf16 weights (f32 activations split exactly) and not on sm_75", () => {
    expect(mmaGemmApplies(req, caps)).toBe(true);
    const turing = synthCapsFrom(
      planCapsOf({ device: { info: { ...info, computeCapability: [7, 5] } } } as unknown as CudaContext),
    );
    expect(mmaGemmApplies(req, turing)).toBe(false);
  });

  it("issues mma.sync and assembles with ptxas for sm_80 and sm_90", async () => {
    const s = synthesizeMmaGemm(req, caps);
    await expectPtxasAccepts(s.kernel, info, (ptx) => expect(ptx).toMatch(/mma\.sync\.aligned\.m16n8k16/));
  });
});
