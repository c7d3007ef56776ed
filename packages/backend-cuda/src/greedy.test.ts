// greedy_next's PTX (the kernel is @poot/kernelgen's, tested there under the interpreter) through ptxas.
import { lowerPtx } from "@poot/codegen";
import { greedyNext } from "@poot/kernelgen";
import { describe, expect, it } from "vitest";
import { expectPtxasAccepts, H200_LIMITS } from "../test/ptx.js";
import { cudaCaps } from "./device.js";

describe("greedy_next PTX", () => {
  it("reads the row with 16-byte loads and assembles with ptxas for sm_80 and sm_90", async () => {
    const text = lowerPtx(greedyNext, cudaCaps(H200_LIMITS), { arch: "sm_90" }).text!;
    expect(text.split("\n").filter((l) => /ld\.global\.v4\.(f32|b32)/.test(l)).length).toBeGreaterThanOrEqual(4);
    await expectPtxasAccepts(greedyNext);
  });
});
