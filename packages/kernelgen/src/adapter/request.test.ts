// synthesizeRequest's refusals are typed, and its caps mapping follows DeviceCaps: unit tests on hand-made requests.

import { describe, expect, it } from "vitest";
import type { Access, KernelRequest } from "@poot/graph-plan";
import { defaultTarget } from "@poot/graph-plan";
import { KernelgenError } from "../errors.js";
import { synthCapsFrom, synthesizeRequest } from "./request.js";

const dense = (value: number, shape: number[], dtype: Access["dtype"] = "f32"): Access => {
  const strides = shape.map((_, d) => shape.slice(d + 1).reduce((a, b) => a * b, 1));
  return { value, root: value, dtype, shape, strides, offset: 0 };
};

const CAPS = { maxWorkgroup: 64, sharedBytes: 16384 };

function req(kind: KernelRequest["kind"], op: string, inputs: Access[], output: Access, params: Record<string, unknown> = {}): KernelRequest {
  return { kind, op, inputs, output, params: params as never, region: null, emulated16: false };
}

describe("synthesizeRequest", () => {
  it("maps DeviceCaps to SynthCaps (subgroups when wider than one lane)", () => {
    const c = synthCapsFrom(defaultTarget("wgpu").caps as never);
    expect(c).toEqual({ maxWorkgroup: 256, subgroupSize: 32, sharedBytes: 16384, maxGridDim: 65535 });
  });

  it("refuses attention with an unknown mask kind, naming the mask", () => {
    const q = dense(0, [1, 2, 1, 8]), k = dense(1, [1, 2, 4, 8]), v = dense(2, [1, 2, 4, 8]), m = dense(3, [1, 1, 1, 4], "bool");
    const r = req("attention", "Attention", [q, k, v, m], dense(4, [1, 2, 1, 8]), { scale: 1, softCap: null, mask: "alibi", maskApply: "select", window: 0, groups: 1 });
    expect(() => synthesizeRequest(r, CAPS)).toThrow(KernelgenError);
    expect(() => synthesizeRequest(r, CAPS)).toThrow(expect.objectContaining({ code: "bad_param", context: expect.objectContaining({ param: "mask" }) }));
  });

  it("leaves two-stage argmax to the imported library", () => {
    const r = req("reduction-row", "ArgMaxChunk", [dense(0, [2, 100])], dense(1, [2, 4], "i32"), { chunk: 32 });
    expect(() => synthesizeRequest(r, CAPS)).toThrow(expect.objectContaining({ code: "bad_param" }));
  });

  it("serves a strided (transposed view) weight through the inline contraction instead of the fixed-layout GEMV", () => {
    const w: Access = { ...dense(1, [8, 16]), strides: [1, 8] };
    const r = req("gemv", "ContractionEpilogue", [dense(0, [1, 16]), w], dense(2, [1, 8]), { transposeB: true, accDtype: "f32", epilogue: null });
    expect(synthesizeRequest(r, CAPS).bindings.map((x) => x.buffer)).toEqual(["in0", "in1", "out"]);
  });

  it("refuses a strided tensor where RoPE needs a dense one", () => {
    const x: Access = { ...dense(0, [2, 8]), strides: [1, 2] };
    const r = req("rope", "Rope", [x, dense(1, [2, 8]), dense(2, [2, 8])], dense(3, [2, 8]), { style: "half", dtype: "f32" });
    expect(() => synthesizeRequest(r, CAPS)).toThrow(expect.objectContaining({ code: "bad_shape" }));
  });

  it("binds every kernel buffer to a request input or the output", () => {
    const r = req("gemv", "ContractionEpilogue", [dense(0, [2, 16]), dense(1, [8, 16])], dense(2, [2, 8]), { transposeB: true, accDtype: "f32", epilogue: null });
    const k = synthesizeRequest(r, CAPS);
    expect(k.bindings).toEqual([
      { buffer: "x", source: { kind: "input", index: 0 } },
      { buffer: "W", source: { kind: "input", index: 1 } },
      { buffer: "y", source: { kind: "output" } },
    ]);
  });
});
