// `load4` (decision 0302): four consecutive buffer elements as one vec4, widened like `load`; 8-bit storage picks
// zero or sign extension. Interpreter results against values worked out by hand; validator and printer/JSON forms.

import { describe, expect, it } from "vitest";
import { kernel } from "./dsl.js";
import { interpret } from "./interp.js";
import type { Expr, Kernel } from "./ir.js";
import { parseKirJson, toKirJson } from "./json.js";
import { printKernel } from "./print.js";
import { validateKernel } from "./validate.js";

/** A kernel storing load4(src, 1 + 4·thread) lanes into a vec4 output (two threads). */
function copy4(
  elem: "u8" | "i8" | "f16" | "bf16" | "f32" | "i32",
  type: "vec4<f32>" | "vec4<i32>" | "vec4<u32>",
): Kernel {
  return kernel(`copy4_${elem}_${type.slice(5, 8)}`, { workgroupSize: [2, 1, 1] }, ({ lid, buffer }) => {
    const src = buffer("src", elem, "read");
    const o = buffer("o", type, "write");
    o.set(lid.x, src.at4(lid.x.mul(4).add(1), type) as never);
  });
}

describe("load4 in the interpreter", () => {
  it("u8 bytes: vec4<u32> zero-extends, vec4<i32> sign-extends", () => {
    const bytes = Uint8Array.from([9, 0x00, 0x7f, 0x80, 0xff, 0x01, 0xfe, 0x81, 0x40, 7]);
    const zu = new Uint32Array(8);
    interpret(copy4("u8", "vec4<u32>"), { grid: [1], buffers: { src: bytes, o: zu } });
    expect(Array.from(zu)).toEqual([0, 127, 128, 255, 1, 254, 129, 64]);
    const si = new Int32Array(8);
    interpret(copy4("u8", "vec4<i32>"), { grid: [1], buffers: { src: bytes, o: si } });
    expect(Array.from(si)).toEqual([0, 127, -128, -1, 1, -2, -127, 64]);
  });

  it("i8 bytes read as vec4<u32> zero-extend", () => {
    const bytes = Int8Array.from([0, -1, -128, 5, 127, 0, 0, 0, -2, 0]);
    const zu = new Uint32Array(8);
    interpret(copy4("i8", "vec4<u32>"), { grid: [1], buffers: { src: bytes, o: zu } });
    expect(Array.from(zu)).toEqual([255, 128, 5, 127, 0, 0, 0, 254]);
  });

  it("f16 / bf16 widen to f32 exactly, f32 and i32 are copied", () => {
    const h = Uint16Array.from([0, 0x3c00, 0xc000, 0x0001, 0x7c00, 0x3555, 0x8000, 0x7bff, 0xfc00, 0]);
    const o = new Float32Array(8);
    interpret(copy4("f16", "vec4<f32>"), { grid: [1], buffers: { src: h, o } });
    expect(Array.from(o)).toEqual([1, -2, 2 ** -24, Infinity, Math.fround(0.333251953125), -0, 65504, -Infinity]);
    const b = Uint16Array.from([0, 0x3f80, 0xc040, 0x0001, 0x7f80, 0x3eaa, 0x8000, 0x4000, 0xff80, 0]);
    interpret(copy4("bf16", "vec4<f32>"), { grid: [1], buffers: { src: b, o } });
    expect(Array.from(o)).toEqual([1, -3, 2 ** -133, Infinity, 0.33203125, -0, 2, -Infinity]);
    const ints = Int32Array.from([0, -5, 6, -7, 8, 9, 10, 11, 12, 13]);
    const oi = new Int32Array(8);
    interpret(copy4("i32", "vec4<i32>"), { grid: [1], buffers: { src: ints, o: oi } });
    expect(Array.from(oi)).toEqual([-5, 6, -7, 8, 9, 10, 11, 12]);
  });

  it("reports an element past the end (the last lane), not only the first", () => {
    const bytes = new Uint8Array(8); // thread 1 reads 5..8: element 8 is out of bounds
    expect(() =>
      interpret(copy4("u8", "vec4<u32>"), { grid: [1], buffers: { src: bytes, o: new Uint32Array(8) } }),
    ).toThrow(
      expect.objectContaining({ code: "out_of_bounds", detail: expect.objectContaining({ array: "src", index: 8 }) }),
    );
  });
});

describe("load4 in the validator, printer and JSON form", () => {
  const k = copy4("u8", "vec4<i32>");
  const swap = (e: Partial<Expr> & { array?: string }, elem?: string, access?: string): Kernel => {
    const lets = k.body.map((s) =>
      s.s === "let" && s.value.k === "load4"
        ? { ...s, type: (e.type ?? s.type) as never, value: { ...s.value, ...e } as Expr }
        : s,
    );
    return {
      ...k,
      body: lets,
      buffers: k.buffers.map((b) =>
        b.name === "src"
          ? { ...b, ...(elem ? { elem: elem as never } : {}), ...(access ? { access: access as never } : {}) }
          : b,
      ),
    };
  };
  const codes = (x: Kernel): string[] => validateKernel(x).map((i) => i.code);

  it("accepts the kernel and round-trips it through JSON; the printer names the lanes", () => {
    expect(validateKernel(k)).toEqual([]);
    expect(parseKirJson(toKirJson(k))).toEqual(k);
    expect(printKernel(k)).toContain("src[");
    expect(printKernel(k)).toContain("+0..3 as vec4<i32>]");
  });

  it("rejects a type the element cannot widen to, a vector buffer, a write-only buffer and a non-buffer", () => {
    expect(codes(swap({}, "f32"))).toContain("type_mismatch");
    expect(codes(swap({ type: "vec4<f32>" }, "i8"))).toContain("type_mismatch");
    expect(codes(swap({}, "vec4<i32>"))).toContain("bad_vector");
    expect(codes(swap({}, undefined, "write"))).toContain("access_violation");
    expect(codes(swap({ array: "nope" }))).toContain("unknown_name");
  });
});
