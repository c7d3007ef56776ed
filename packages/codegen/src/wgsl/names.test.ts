import { describe, expect, test } from "vitest";
import { kernel } from "@poot/kernel-dsl";
import { lowerWgsl } from "./target.js";
import { wgslIdent } from "./names.js";

describe("WGSL identifiers", () => {
  test("keywords, builtin functions and generated names are renamed; others kept", () => {
    expect(["loop", "select", "exp", "params", "gid", "ld_w", "acc", "row"].map(wgslIdent)).toEqual([
      "loop_",
      "select_",
      "exp_",
      "params_",
      "gid_",
      "ld_w_",
      "acc",
      "row",
    ]);
  });
  test("a kernel whose names clash with WGSL prints them renamed everywhere", () => {
    const k = kernel("clash", { workgroupSize: [8, 1, 1] }, ({ buffer, uniform, gid, let_, exp }) => {
      const select = buffer("select", "f32", "read");
      const loop = buffer("loop", "f32", "write");
      const params = uniform("params", "f32");
      const e = let_(exp(select.at(gid.x)).mul(params), "exp");
      loop.set(gid.x, e);
    });
    const text = lowerWgsl(k, {
      maxWorkgroup: 64,
      subgroupSize: undefined,
      sharedBytes: 0,
      dtypes: ["f32"],
      maxStorageBuffers: 8,
      f16: false,
      bf16: false,
    }).text!;
    expect(text).toContain("var<storage, read> select_: array<f32>;");
    expect(text).toContain("params_: f32,");
    expect(text).toContain("let exp_: f32 = (exp(");
    expect(text).toContain("loop_[gid.x] = exp_;");
  });
});
