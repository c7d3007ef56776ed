import { describe, expect, test } from "vitest";
import { f32ToF16Bits, f16BitsToF32 } from "./convert.js";
import { GraphError } from "./errors.js";
import { decodeBlock, decodePacked, validatePackedFormat, type DecodeExpr, type PackedFormat } from "./packed.js";

const c = (value: number): DecodeExpr => ({ op: "const", value });
const i: DecodeExpr = { op: "i" };

/** GGUF Q8_0 as data: f16 scale d at byte 0, then 32 int8 quants; x_i = d * q_i. */
const Q8_0: PackedFormat = {
  name: "q8_0",
  blockSize: 32,
  bytesPerBlock: 34,
  decode: {
    op: "mul",
    a: { op: "load", type: "f16", offset: c(0) },
    b: { op: "load", type: "i8", offset: { op: "add", a: c(2), b: i } },
  },
};

/** GGUF Q4_0 as data: f16 d, 16 bytes of nibbles; x_j = d*((qs[j]&15)-8), x_{j+16} = d*((qs[j]>>4)-8). */
const Q4_0: PackedFormat = {
  name: "q4_0",
  blockSize: 32,
  bytesPerBlock: 18,
  decode: {
    op: "let",
    name: "d",
    value: { op: "load", type: "f16", offset: c(0) },
    body: {
      op: "mul",
      a: { op: "var", name: "d" },
      b: {
        op: "sub",
        a: {
          op: "and",
          a: {
            op: "shr",
            a: { op: "load", type: "u8", offset: { op: "add", a: c(2), b: { op: "and", a: i, b: c(15) } } },
            b: { op: "mul", a: { op: "shr", a: i, b: c(4) }, b: c(4) },
          },
          b: c(15),
        },
        b: c(8),
      },
    },
  },
};

function q8Block(scale: number, qs: number[]): Uint8Array {
  const b = new Uint8Array(34);
  const h = f32ToF16Bits(scale);
  b[0] = h & 0xff;
  b[1] = h >> 8;
  qs.forEach((q, k) => (b[2 + k] = q & 0xff));
  return b;
}

describe("decode recipes as data", () => {
  test("Q8_0 matches a hand computation", () => {
    const qs = Array.from({ length: 32 }, (_, k) => k * 7 - 100);
    const bytes = new Uint8Array(2 + 34 * 2);
    bytes.set(q8Block(0.0625, qs), 2);
    bytes.set(
      q8Block(
        -1.5,
        qs.map((q) => -q),
      ),
      36,
    );
    const out = new Float64Array(40).fill(99);
    decodeBlock(Q8_0, bytes, 2, out, 4);
    decodeBlock(Q8_0, bytes, 36, out, 8);
    // Block 2 overwrites positions 8..39; block 1's tail got replaced, so check the exact placements.
    for (let k = 0; k < 4; k++) expect(out[4 + k]).toBe(0.0625 * qs[k]!);
    for (let k = 0; k < 32; k++) expect(out[8 + k]).toBe(-1.5 * -qs[k]!);
    expect(out[3]).toBe(99);
  });

  test("Q4_0 with let/var and bit ops matches nibble unpacking by hand", () => {
    const bytes = new Uint8Array(18);
    const d = f16BitsToF32(f32ToF16Bits(0.3));
    bytes[0] = f32ToF16Bits(0.3) & 0xff;
    bytes[1] = f32ToF16Bits(0.3) >> 8;
    for (let j = 0; j < 16; j++) bytes[2 + j] = (j * 37 + 11) & 0xff;
    const out = decodePacked(Q4_0, bytes, 32);
    for (let j = 0; j < 16; j++) {
      const byte = (j * 37 + 11) & 0xff;
      expect(out[j]).toBe(Math.fround(d * ((byte & 15) - 8)));
      expect(out[j + 16]).toBe(Math.fround(d * ((byte >> 4) - 8)));
    }
  });

  test("malformed recipes raise packed-format", () => {
    const bad = (f: PackedFormat): void => {
      try {
        validatePackedFormat(f);
        decodePacked(f, new Uint8Array(f.bytesPerBlock), f.blockSize);
        throw new Error("expected a failure");
      } catch (e) {
        expect(e).toBeInstanceOf(GraphError);
        expect((e as GraphError).code).toBe("packed-format");
      }
    };
    bad({ ...Q8_0, name: "oob", bytesPerBlock: 20 });
    bad({ ...Q8_0, name: "novar", decode: { op: "var", name: "x" } });
    bad({ ...Q8_0, name: "zero", blockSize: 0 });
    expect(() => decodeBlock(Q8_0, new Uint8Array(10), 0, new Float64Array(32), 0)).toThrow(GraphError);
  });
});
