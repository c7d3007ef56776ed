// The public API as the CLI uses it: pick a target by name from TARGETS, lower, validate with
// validateTargetCode; every result is ok, or unavailable only where a tool is not installed.

import { describe, expect, test } from "vitest";
import { TARGETS, validateTargetCode, type DeviceCaps, type TargetName } from "@poot/codegen";
import { gemv } from "./kernels.js";
import { AMD_CAPS, CUDA_CAPS, VULKAN_CAPS, WASM_CAPS, WEBGPU_CAPS } from "./helpers.js";

const caps: Record<TargetName, DeviceCaps> = {
  wgsl: WEBGPU_CAPS,
  ptx: CUDA_CAPS,
  spirv: VULKAN_CAPS,
  amdgpu: AMD_CAPS,
  wasm: WASM_CAPS,
  x86: WASM_CAPS,
};

describe("TARGETS + validateTargetCode", () => {
  test("every target is registered under its name", () => {
    expect(Object.entries(TARGETS).map(([k, t]) => [k, t.name])).toEqual([
      ["wgsl", "wgsl"],
      ["ptx", "ptx"],
      ["spirv", "spirv"],
      ["amdgpu", "amdgpu"],
      ["wasm", "wasm"],
      ["x86", "x86"],
    ]);
  });
  for (const name of ["ptx", "spirv", "amdgpu", "wasm"] as const) {
    test(`${name}: lowered GEMV validates for each configuration`, async () => {
      const code = TARGETS[name].lower(gemv, caps[name]);
      expect(code.target).toBe(name);
      const results = await validateTargetCode(code);
      const expected = {
        ptx: ["sm_90", "sm_80"],
        amdgpu: ["gfx90a", "gfx942", "gfx1100"],
        spirv: ["vulkan1.1"],
        wasm: ["wasm"],
      }[name];
      expect(results.map((r) => r.label)).toEqual(expected);
      for (const r of results)
        expect(r.result.status === "invalid" ? r.result.message : "not invalid").toBe("not invalid");
    });
  }
  test("WGSL without a device reports the validator as unavailable, with the reason", async () => {
    const [r] = await validateTargetCode(TARGETS.wgsl.lower(gemv, WEBGPU_CAPS));
    expect(r!.result).toMatchObject({ status: "unavailable", reason: expect.stringContaining("openDawnDevice") });
  });
});
