// The CPU (serial threads + SIMD loads) dequant GEMV: each format's recipe vectorized four lanes at a time
// (decode-unrolled.ts `element4`), in the interpreter against graph-ir's DecodePacked + MatMul in float64. GGUF Q4_K
// and Q6_K are written here as the GGUF spec (and models' recipes) define them; the small formats come from formats.ts.

import { Builder, evaluate, f32ToF16Bits } from "@poot/graph-ir";
import type { DecodeExpr, PackedFormat } from "@poot/graph-ir";
import type { Epilogue } from "@poot/kernelgen";
import { describe, expect, it } from "vitest";
import { cpuSynthCaps, synthesizeDequantGemv } from "@poot/kernelgen";
import { Q4_0, Q4_1, Q5_0, Q8_0, TEST_MIX, expectDequantGemv, randomMixBlocks } from "./formats.js";
import { expectClose, poisoned, randF32, rng, run } from "./helpers.js";

const c = (value: number): DecodeExpr => ({ op: "const", value });
const I: DecodeExpr = { op: "i" };
const op = (o: string, a: DecodeExpr | number, b: DecodeExpr | number): DecodeExpr =>
  ({ op: o, a: typeof a === "number" ? c(a) : a, b: typeof b === "number" ? c(b) : b }) as DecodeExpr;
const ld = (type: "u8" | "i8" | "f16", offset: DecodeExpr | number): DecodeExpr => ({
  op: "load",
  type,
  offset: typeof offset === "number" ? c(offset) : offset,
});
const sel = (cond: DecodeExpr, a: DecodeExpr, b: DecodeExpr): DecodeExpr => ({ op: "select", cond, a, b });
const f32 = (a: DecodeExpr): DecodeExpr => ({ op: "f32", a });
const let_ = (name: string, value: DecodeExpr, body: DecodeExpr): DecodeExpr => ({ op: "let", name, value, body });
const v = (name: string): DecodeExpr => ({ op: "var", name });

/** K-quant 6-bit scale (or min) of sub-block j (ggml get_scale_min_k4). */
const scaleK4 = (j: DecodeExpr, min: boolean): DecodeExpr => {
  const q = (off: DecodeExpr): DecodeExpr => ld("u8", op("add", off, 4));
  const lo = min ? op("and", q(op("add", j, 4)), 63) : op("and", q(op("mod", j, 4)), 63);
  const hiLow = min ? op("shr", q(op("add", op("mod", j, 4), 8)), 4) : op("and", q(op("add", op("mod", j, 4), 8)), 15);
  const hiTop = op("shl", op("shr", q(min ? j : op("mod", j, 4)), 6), 4);
  return sel(op("lt", j, 4), lo, op("or", hiLow, hiTop));
};

/** GGUF Q4_K: f16 d, f16 dmin, 12 bytes of scales/mins, 128 bytes of nibbles; x = d·sc·q − dmin·m per 32 elements. */
const Q4_K: PackedFormat = {
  name: "q4_k",
  blockSize: 256,
  bytesPerBlock: 144,
  decode: let_(
    "j",
    op("idiv", I, 32),
    let_(
      "byte",
      ld("u8", op("add", op("add", op("mul", op("idiv", I, 64), 32), op("mod", I, 32)), 16)),
      op(
        "sub",
        op(
          "mul",
          f32(op("mul", ld("f16", 0), scaleK4(v("j"), false))),
          sel(op("lt", op("mod", I, 64), 32), op("and", v("byte"), 15), op("shr", v("byte"), 4)),
        ),
        f32(op("mul", ld("f16", 2), scaleK4(v("j"), true))),
      ),
    ),
  ),
};

/** GGUF Q6_K: 128 bytes of low nibbles, 64 of 2-bit highs, 16 i8 scales, f16 d; x = d·sc·(q6 − 32) per 16 elements. */
const Q6_K: PackedFormat = {
  name: "q6_k",
  blockSize: 256,
  bytesPerBlock: 210,
  decode: let_(
    "h",
    op("idiv", I, 128),
    let_(
      "qq",
      op("idiv", op("mod", I, 128), 32),
      let_(
        "l",
        op("mod", I, 32),
        let_(
          "lb",
          ld("u8", op("add", op("add", op("mul", v("h"), 64), v("l")), op("mul", op("mod", v("qq"), 2), 32))),
          op(
            "mul",
            f32(
              op(
                "mul",
                ld("f16", 208),
                ld(
                  "i8",
                  op(
                    "add",
                    op("add", op("add", 192, op("mul", v("h"), 8)), op("idiv", v("l"), 16)),
                    op("mul", v("qq"), 2),
                  ),
                ),
              ),
            ),
            op(
              "sub",
              op(
                "or",
                sel(op("lt", v("qq"), 2), op("and", v("lb"), 15), op("shr", v("lb"), 4)),
                op(
                  "shl",
                  op(
                    "and",
                    op(
                      "shr",
                      ld("u8", op("add", op("add", 128, op("mul", v("h"), 32)), v("l"))),
                      op("mul", v("qq"), 2),
                    ),
                    3,
                  ),
                  4,
                ),
              ),
              32,
            ),
          ),
        ),
      ),
    ),
  ),
};

/** Byte offsets of each format's f16 fields (set to modest values so no block decodes to inf/NaN). */
const HALVES: Record<string, readonly number[]> = {
  q8_0: [0],
  q4_0: [0],
  q4_1: [0, 2],
  q5_0: [0],
  q4_k: [0, 2],
  q6_k: [208],
};

function blocks(r: () => number, f: PackedFormat, n: number): Uint8Array {
  if (f === TEST_MIX) return randomMixBlocks(r, n);
  const bytes = Uint8Array.from({ length: n * f.bytesPerBlock }, () => Math.floor(r() * 256));
  for (let b = 0; b < n; b++) {
    for (const at of HALVES[f.name]!) {
      const h = f32ToF16Bits((r() * 2 - 1) * 0.05);
      bytes[b * f.bytesPerBlock + at] = h & 0xff;
      bytes[b * f.bytesPerBlock + at + 1] = h >> 8;
    }
  }
  return bytes;
}

const CPU = cpuSynthCaps();
const hasLoad4 = (k: unknown): boolean => JSON.stringify(k).includes('"k":"load4"');

describe("CPU dequant GEMV with SIMD loads", () => {
  for (const f of [Q8_0, Q4_0, Q4_1, Q5_0, Q4_K, Q6_K, TEST_MIX]) {
    const nbs =
      f.blockSize === 256
        ? [
            [1, 1, 1],
            [2, 2, 9],
            [1, 3, 3],
            [10, 1, 3],
          ]
        : [
            [1, 1, 1],
            [3, 5, 17],
            [2, 4, 1],
            // Chunks of 8 rows sharing each decoded weight: two over grid z, the second ragged.
            [13, 2, 5],
          ];
    for (const [B, nb, N] of nbs as [number, number, number][]) {
      it(`${f.name}: batch ${B}, ${nb} blocks per row, N=${N}, against float64`, () => {
        const r = rng(B * 1009 + nb * 101 + N + f.bytesPerBlock);
        const K = nb * f.blockSize;
        const bytes = blocks(r, f, N * nb);
        const x = randF32(r, B * K);
        const s = synthesizeDequantGemv({ name: `dq_${f.name}`, K, N, batch: B, format: f }, CPU);
        expect(hasLoad4(s.kernel)).toBe(true);
        expect(s.kernel.buffers.find((p) => p.name === "W")?.elem).toBe("u8");
        expectDequantGemv(s, f, B, K, N, bytes, x);
      });
    }
  }

  it("GGUF Q8_0, Q4_K and Q6_K vectorize whole: every vec4 built in the kernel is a splat (no lane-by-lane fallback, no per-lane shift counts)", () => {
    for (const f of [Q8_0, Q4_K, Q6_K]) {
      const body = synthesizeDequantGemv({ name: "dq", K: f.blockSize, N: 8, format: f }, CPU).kernel.body;
      const vecs: { elems: unknown[] }[] = [];
      const walk = (x: unknown): void => {
        if (Array.isArray(x)) x.forEach(walk);
        else if (x !== null && typeof x === "object") {
          if ((x as { k?: string }).k === "vec") vecs.push(x as { elems: unknown[] });
          Object.values(x).forEach(walk);
        }
      };
      walk(body);
      const mixed = vecs.filter((v) => new Set(v.elems.map((e) => JSON.stringify(e))).size > 1);
      expect(mixed, f.name).toEqual([]);
      expect(JSON.stringify(body).match(/"k":"load4"/g)!.length, f.name).toBeGreaterThanOrEqual(f.blockSize / 4);
    }
  });

  it("two packed weights sharing x (gate and up: heads 2, epilogue acc · acc1), Q4_K and Q6_K", () => {
    const mul: Epilogue = {
      inputs: [],
      nodes: [
        { op: "leaf", name: "acc" },
        { op: "leaf", name: "acc1" },
        { op: "binary", fn: "mul", a: 0, b: 1 },
      ],
      node: 2,
    };
    for (const f of [Q4_K, Q6_K]) {
      // Q6_K with 6 rows: one chunk of rows sharing each decoded gate/up pair.
      const [B, K, N] = [f === Q6_K ? 6 : 2, 2 * f.blockSize, 5];
      const r = rng(77 + f.bytesPerBlock);
      const [w0, w1] = [blocks(r, f, N * 2), blocks(r, f, N * 2)];
      const x = randF32(r, B * K);
      const s = synthesizeDequantGemv({ name: "dq2", K, N, batch: B, heads: 2, format: f, epilogue: mul }, CPU);
      const y = poisoned(s.kernel, "y", B * N);
      run(s.kernel, { grid: [...s.grid], buffers: { x, W: w0, W1: w1, y } });
      const g = new Builder();
      const xr = g.const("x", "f32", [B, K]);
      const acc = (name: string) =>
        g.matmul(xr, g.transpose(g.decodePacked(g.const(name, { packed: f }, [N, K])), [1, 0]));
      g.output("y", g.mul(acc("w0"), acc("w1")));
      const want = evaluate(g.build(), { consts: { x, w0, w1 } }).outputs.y!.data;
      expectClose(
        y as Float32Array,
        want,
        Array.from(want, (v) => Math.abs(v)),
        1e-4,
        1e-6,
      );
    }
  });
});
