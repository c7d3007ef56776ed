// .kir.json and printer unit tests: lossless round trips (special floats included), canonical bytes,
// typed decode errors, and hand-written expected printer text.

import { describe, expect, it } from "vitest";
import { kernel } from "./dsl.js";
import { KirJsonError, KernelValidationError } from "./errors.js";
import type { Kernel } from "./ir.js";
import { parseKirJson, toKirJson } from "./json.js";
import { printKernel } from "./print.js";
import { specialize } from "./specialize.js";

const scaleKernel = kernel("scale", { workgroupSize: [{ spec: "WG" }, 1, 1], specs: { WG: 128 } }, (k) => {
  const { buffer, uniform, gid, let_, if_, select, f32 } = k;
  const x = buffer("x", "bf16", "read");
  const y = buffer("y", "f16", "write");
  const n = uniform("n", "u32");
  const i = let_(gid.x, "i");
  if_(i.lt(n), () => {
    const v = x.at(i);
    y.set(i, select(v.ne(v), f32(NaN), v.mul(f32(-0)).add(f32(Infinity))));
  });
});

describe(".kir.json", () => {
  it("round-trips losslessly, NaN / -0 / Infinity literals included", () => {
    const text = toKirJson(scaleKernel);
    const back = parseKirJson(text);
    expect(back).toEqual(scaleKernel);
    expect(toKirJson(back)).toBe(text);
    expect(text).toContain('"value": "NaN"');
    expect(text).toContain('"value": "-0"');
    expect(text).toContain('"value": "Infinity"');
    expect(JSON.parse(text)).toMatchObject({ format: "poot.kir", version: 1 });
  });

  it("is canonical: key order of the input object does not change the bytes", () => {
    const reordered = JSON.parse(JSON.stringify(scaleKernel, Object.keys(scaleKernel).reverse())) as Kernel;
    expect(toKirJson({ ...reordered, ...scaleKernel })).toBe(toKirJson(scaleKernel));
    const shuffled: Kernel = {
      body: scaleKernel.body,
      shared: [],
      uniforms: scaleKernel.uniforms,
      buffers: scaleKernel.buffers,
      specs: scaleKernel.specs,
      workgroupSize: scaleKernel.workgroupSize,
      name: "scale",
    };
    expect(toKirJson(shuffled)).toBe(toKirJson(scaleKernel));
  });

  it("rejects malformed documents with typed errors", () => {
    expect(() => parseKirJson("{", "a.kir.json")).toThrow(
      expect.objectContaining({ code: "bad_json", file: "a.kir.json" }),
    );
    expect(() => parseKirJson('{"format":"other"}')).toThrow(KirJsonError);
    expect(() => parseKirJson('{"format":"poot.kir","version":2,"kernel":{}}')).toThrow(
      expect.objectContaining({ code: "bad_version" }),
    );
    const broken = JSON.parse(toKirJson(scaleKernel)) as { kernel: { workgroupSize: unknown[] } };
    broken.kernel.workgroupSize = [0, 1, 1];
    expect(() => parseKirJson(JSON.stringify(broken))).toThrow(KernelValidationError);
  });
});

describe("printKernel", () => {
  it("prints declarations and structured statements readably", () => {
    expect(printKernel(scaleKernel)).toBe(
      [
        "kernel scale workgroup($WG, 1, 1) {",
        "  spec $WG: u32 = 128;",
        "  @binding(0) buffer x: array<bf16>, read;",
        "  @binding(1) buffer y: array<f16>, write;",
        "  uniform n: u32;",
        "  let i: u32 = global_id.x;",
        "  if ((i < n)) {",
        "    let x_v: f32 = x[i];",
        "    y[i] = select((x_v != x_v), NaNf, ((x_v * -0f) + Infinityf));",
        "  }",
        "}",
        "",
      ].join("\n"),
    );
  });
});

describe("specialize", () => {
  it("replaces spec constants in sizes and expressions", () => {
    const s = specialize(scaleKernel, { WG: 32 });
    expect(s.workgroupSize).toEqual([32, 1, 1]);
    expect(s.specs).toEqual([]);
    expect(JSON.stringify(s)).not.toContain('"spec"');
    expect(() =>
      specialize(kernel("needs", { workgroupSize: [{ spec: "W" }, 1, 1], specs: { W: undefined } }, () => {})),
    ).toThrow(expect.objectContaining({ code: "bad_size" }));
  });
});
