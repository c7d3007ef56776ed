// The GEMVs' PTX: accepted by ptxas for sm_80 and sm_90 (skipped, saying so, where ptxas is missing), and
// every global load is a 16-byte vector load, the property their bandwidth depends on.
import { lowerPtx } from "@poot/codegen";
import { describe, expect, it } from "vitest";
import { cudaCaps } from "@poot/backend-cuda";
import { expectPtxasAccepts, H200_LIMITS } from "./ptx.js";
import { gemvRowsBf16, gemvRowsBf16x2, gemvRowsF32 } from "./row-gemvs.js";

const kernels = [
  ["gemv_rows_bf16", gemvRowsBf16, 3],
  ["gemv_rows_bf16_x2", gemvRowsBf16x2, 6],
  ["gemv_rows_f32", gemvRowsF32, 2],
] as const;

describe("row GEMV PTX", () => {
  it.each(kernels)("%s loads W and x only with ld.global.v4 (%i per step)", (_, kernel, loads) => {
    const text = lowerPtx(kernel, cudaCaps(H200_LIMITS), { arch: "sm_90" }).text!;
    const globalLoads = text.split("\n").filter((l) => /\bld\.global\./.test(l));
    expect(globalLoads).toHaveLength(loads);
    expect(globalLoads.every((l) => /ld\.global\.v4\.(b32|f32|u32)/.test(l))).toBe(true);
  });

  it.each(kernels)("%s assembles with ptxas for sm_80 and sm_90", async (_, kernel) => {
    await expectPtxasAccepts(kernel);
  });
});
