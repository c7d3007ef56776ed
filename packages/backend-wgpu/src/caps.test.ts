// The caps translations: graph-plan accepts the planning caps as a wgpu target, and subgroup sizes are
// only passed on when fixed (WGSL cannot pin a pipeline's subgroup size).

import { describe, expect, it } from "vitest";
import { makeTarget } from "@poot/graph-plan";
import { synthCapsFrom } from "@poot/kernelgen";
import { codegenCaps, fixedSubgroupSize, planCaps, synthCaps, type WgpuCaps } from "./caps.js";
import { wgpuLowering } from "./executor/device.js";

// What lavapipe (Mesa 25, llvmpipe 256-bit) granted through Dawn in this workspace.
const LAVAPIPE: WgpuCaps = {
  adapter: "mesa llvmpipe",
  f16: true,
  subgroups: true,
  subgroupSizes: [8, 8],
  timestamps: true,
  maxWorkgroup: 1024,
  maxWorkgroupDims: [1024, 1024, 1024],
  maxWorkgroupsPerDimension: 65535,
  sharedBytes: 32768,
  maxStorageBuffers: 16,
  maxBindingBytes: 134217728,
  maxBufferBytes: 4294967295,
  bindingAlignment: 16,
  features: ["shader-f16", "subgroups", "timestamp-query"],
};

describe("caps translations", () => {
  it("graph-plan validates the planning caps as a wgpu target", () => {
    const t = makeTarget({ kind: "wgpu", caps: planCaps(LAVAPIPE) });
    expect(t.caps).toMatchObject({ subgroupSize: 8, maxStorageBuffers: 16, dtypes: { f16: true, bf16: false } });
  });

  it("a varying subgroup size is not used for kernels", () => {
    const varying = { ...LAVAPIPE, subgroupSizes: [16, 64] as const };
    expect(fixedSubgroupSize(varying)).toBeNull();
    expect(codegenCaps(varying).subgroupSize).toBeUndefined();
    expect(synthCaps(varying)).not.toHaveProperty("subgroupSize");
    expect(planCaps(varying).subgroupSize).toBe(1);
    expect(makeTarget({ kind: "wgpu", caps: planCaps(varying) }).kind).toBe("wgpu");
  });

  it("f16 storage is native only with shader-f16; bf16 never is", () => {
    expect(codegenCaps(LAVAPIPE).dtypes).toContain("f16");
    expect(codegenCaps({ ...LAVAPIPE, f16: false }).dtypes).not.toContain("f16");
    expect(codegenCaps(LAVAPIPE).bf16).toBe(false);
  });

  it("synthCaps is what the executor's lowering sizes kernels with (kernelgen's translation, not a copy)", () => {
    expect(synthCaps(LAVAPIPE)).toEqual(wgpuLowering(LAVAPIPE).synth);
    expect(synthCaps(LAVAPIPE)).toEqual(synthCapsFrom(planCaps(LAVAPIPE)));
  });
});
