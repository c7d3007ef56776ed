// `dot4U8I8` and the packed `load4` (decision 2320): the integer dot product of x86 `vpdpbusd` (a's bytes unsigned,
// b's signed, summed into the i32 accumulator) in the interpreter against sums worked out by hand, and the validator
// refusing operands of the wrong types.

import { describe, expect, it } from "vitest";
import { kernel } from "./dsl.js";
import { interpret } from "./interp.js";
import type { Expr, Kernel } from "./ir.js";
import { parseKirJson, toKirJson } from "./json.js";
import { validateKernel } from "./validate.js";

/** o[0] = dot4U8I8(acc, a[0], b[0]) (scalar); o[1..4] = dot4U8I8(acc, packed a bytes 0..15, packed b bytes 0..15). */
const dots: Kernel = kernel("dots", { workgroupSize: [1, 1, 1] }, (b) => {
  const a = b.buffer("a", "u8", "read");
  const bb = b.buffer("bb", "i8", "read");
  const a32 = b.buffer("a32", "u32", "read");
  const b32 = b.buffer("b32", "u32", "read");
  const o = b.buffer("o", "i32", "write");
  o.set(0, b.dot4U8I8(b.i32(-5), a32.at(0), b32.at(0)));
  const acc = b.vec("vec4<i32>", b.i32(1), b.i32(2), b.i32(3), b.i32(4));
  const v = b.let_(b.dot4U8I8(acc, a.at16x8(0), bb.at16x8(0)), "v");
  for (let l = 0; l < 4; l++) o.set(1 + l, v.lane(l));
});

/** o[0..16) = dot4U8I8(lane index, packed a bytes 0..63, packed b bytes 0..63) in 16 lanes (decision 2330). */
const dots16: Kernel = kernel("dots16", { workgroupSize: [1, 1, 1] }, (b) => {
  const a = b.buffer("a", "u8", "read");
  const bb = b.buffer("bb", "i8", "read");
  const o = b.buffer("o", "i32", "write");
  const acc = b.vec("vec16<i32>", ...Array.from({ length: 16 }, (_, l) => b.i32(l)));
  const v = b.let_(b.dot4U8I8(acc, a.at64x8(0), bb.at64x8(0)), "v");
  for (let l = 0; l < 16; l++) o.set(l, v.lane(l));
});

describe("dot4U8I8", () => {
  it("in 16 lanes: 64 packed bytes, each lane its own four (decision 2330)", () => {
    const a = Uint8Array.from({ length: 64 }, (_, i) => (i * 37 + 200) & 255);
    const bb = Int8Array.from({ length: 64 }, (_, i) => ((i * 53 + 100) & 255) - 128);
    const o = new Int32Array(16);
    interpret(dots16, { grid: [1], buffers: { a, bb, o } });
    for (let l = 0; l < 16; l++) {
      let want = l;
      for (let k = 0; k < 4; k++) want += a[4 * l + k]! * bb[4 * l + k]!;
      expect(o[l], `lane ${l}`).toBe(want);
    }
    expect(validateKernel(dots16)).toEqual([]);
  });

  it("sums u8 × i8 over each lane's four bytes into the accumulator", () => {
    const a = Uint8Array.from({ length: 16 }, (_, i) => (i * 37 + 200) & 255);
    const bb = Int8Array.from({ length: 16 }, (_, i) => ((i * 53 + 100) & 255) - 128);
    // a32 = bytes [255, 1, 128, 0], b32 = bytes [-128, 127, -1, 2] (little-endian).
    const a32 = Uint32Array.from([0x008001ff]);
    const b32 = Uint32Array.from([0x02ff7f80]);
    const o = new Int32Array(5);
    interpret(dots, { grid: [1], buffers: { a, bb, a32, b32, o } });
    expect(o[0]).toBe(-5 + 255 * -128 + 1 * 127 + 128 * -1 + 0 * 2);
    for (let l = 0; l < 4; l++) {
      let want = l + 1;
      for (let k = 0; k < 4; k++) want += a[4 * l + k]! * bb[4 * l + k]!;
      expect(o[1 + l], `lane ${l}`).toBe(want);
    }
  });

  it("round-trips through the JSON form", () => {
    expect(parseKirJson(toKirJson(dots))).toEqual(dots);
  });

  it("the validator refuses f32 operands and a packed load of f32 storage", () => {
    const bad = JSON.parse(JSON.stringify(dots)) as { body: { value?: Expr }[] };
    const call = bad.body.find((s) => s.value?.k === "call")!.value as unknown as { args: Expr[] };
    call.args[1] = { k: "const", type: "f32", value: 1 };
    expect(
      validateKernel(bad as unknown as Kernel)
        .map((i) => i.message)
        .join("; "),
    ).toMatch(/args\[1\] must be u32/);
    expect(() =>
      kernel("p", { workgroupSize: [1, 1, 1] }, (b) => {
        b.buffer("f", "f32", "read").at16x8(0);
      }),
    ).toThrow(/only global u8\/i8 buffers/);
  });
});
