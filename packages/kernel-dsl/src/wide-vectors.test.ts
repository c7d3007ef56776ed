// vec8 / vec16 (decision 2310): the wide CPU vectors. A `load4` of 8 or 16 elements widens each like `load` (8-bit
// storage picks zero or sign extension), arithmetic is lane-wise, and lanes read back one by one. Interpreter results
// against values worked out by hand; the validator refuses a wide load whose type does not match the buffer.

import { describe, expect, it } from "vitest";
import { kernel } from "./dsl.js";
import { interpret } from "./interp.js";
import { lanesOf } from "./ir-types.js";
import { validateKernel } from "./validate.js";

/** y[i] = (load of `lanes` bytes at 1, as i32) * 2 + lane i of that vector read back (i < lanes). */
function wide(lanes: 8 | 16, ext: "i32" | "u32") {
  return kernel(`wide${lanes}_${ext}`, { workgroupSize: [1, 1, 1] }, (b) => {
    const src = b.buffer("src", "u8", "read");
    const y = b.buffer("y", "f32", "write");
    const v = src.atVec(b.u32(1), `vec${lanes}<${ext}>`).cast(`vec${lanes}<f32>`);
    const two = b.vec(`vec${lanes}<f32>`, ...Array.from({ length: lanes }, () => b.f32(2)));
    const d = b.let_(v.mul(two), "d");
    for (let i = 0; i < lanes; i++) y.set(b.u32(i), d.lane(i));
  });
}

describe("vec8 / vec16 in the interpreter", () => {
  const bytes = Uint8Array.from({ length: 20 }, (_, i) => (i * 37 + 200) & 255);
  for (const lanes of [8, 16] as const)
    for (const ext of ["i32", "u32"] as const)
      it(`${lanes} bytes as vec${lanes}<${ext}>, doubled, lane by lane`, () => {
        const y = new Float32Array(lanes);
        interpret(wide(lanes, ext), { grid: [1], buffers: { src: bytes, y } });
        const want = Array.from(bytes.subarray(1, 1 + lanes), (c) => 2 * (ext === "i32" && c > 127 ? c - 256 : c));
        expect(Array.from(y)).toEqual(want);
      });

  it("lanesOf counts 8 and 16", () => {
    expect(lanesOf("vec8<f32>")).toBe(8);
    expect(lanesOf("vec16<u32>")).toBe(16);
  });

  it("the validator refuses a wide load of the wrong lane type (planted: f32 lanes from a u8 buffer)", () => {
    const k = wide(16, "u32");
    expect(validateKernel(k)).toEqual([]);
    const planted = JSON.stringify(k.body).replace(
      '"k":"load4","type":"vec16<u32>"',
      '"k":"load4","type":"vec16<f32>"',
    );
    const issues = validateKernel({ ...k, body: JSON.parse(planted) });
    expect(issues.map((i) => i.message).join("; ")).toMatch(/vec16<u32> or vec16<i32>/);
  });
});
