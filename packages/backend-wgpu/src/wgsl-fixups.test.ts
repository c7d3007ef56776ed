// runtimeNonFinite against hand-written WGSL: directives stay first, one private per literal kind used.

import { describe, expect, it } from "vitest";
import { runtimeNonFinite } from "./wgsl-fixups.js";

describe("runtimeNonFinite", () => {
  it("leaves text without non-finite literals unchanged", () => {
    const t = "enable f16;\n@compute @workgroup_size(1) fn main() { var x: f32 = 1.0f; }";
    expect(runtimeNonFinite(t)).toBe(t);
  });

  it("reads -inf and NaN from module-scope privates declared after the directives", () => {
    const t =
      "enable f16;\nenable subgroups;\nfn f() { var a: f32 = bitcast<f32>(0xff800000u); var b = max(a, bitcast<f32>(0xff800000u)) + bitcast<f32>(0x7fc00000u); }";
    expect(runtimeNonFinite(t)).toBe(
      "enable f16;\nenable subgroups;\n" +
        "var<private> poot_ninf_bits: u32 = 0xff800000u;\nvar<private> poot_nan_bits: u32 = 0x7fc00000u;\n" +
        "fn f() { var a: f32 = bitcast<f32>(poot_ninf_bits); var b = max(a, bitcast<f32>(poot_ninf_bits)) + bitcast<f32>(poot_nan_bits); }",
    );
  });
});
