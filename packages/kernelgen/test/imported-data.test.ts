// Imported row gathers (packed copy, bf16 and Q8_0 decode) and bf16 -> f32 conversion in the interpreter,
// against graph-ir's Gather / DecodePacked / Cast evaluated in float64.

import { describe, it } from "vitest";
import { importedKernel } from "@poot/kernelgen";
import { expectExact, oracle, poisoned, randBf16, rng, run } from "./helpers.js";
import { Q4_0, Q8_0, fromWords, randomBlocks, toWords } from "./formats.js";

const grid1 = (threads: number): number[] => [Math.max(1, Math.ceil(threads / 64))];

describe("packed row gathers", () => {
  for (const [f, D, ids] of [
    [Q8_0, 32, [2, 0, 2]],
    [Q8_0, 96, [4]],
    [Q4_0, 32, [1, 3, 0, 3, 2]],
    [Q4_0, 64, [0, 4, 1]],
  ] as const) {
    it(`gather_rows_packed ${f.name} D=${D} ids=${ids.join(",")} (rows not word aligned)`, () => {
      const V = 5;
      const r = rng(D + ids.length);
      const bytes = randomBlocks(r, f, (V * D) / f.blockSize);
      const rowBytes = (D / f.blockSize) * f.bytesPerBlock;
      const R = ids.length;
      const k = importedKernel("gather_rows_packed");
      const out = poisoned(k, "out", Math.ceil((R * rowBytes) / 4));
      run(k, {
        grid: grid1(Math.ceil((R * rowBytes) / 4)),
        buffers: { table: toWords(bytes), ids: Int32Array.from(ids), out },
        uniforms: { R, V, rowBytes },
      });
      const dt = { packed: f };
      const ref = oracle((b) => ({ rows: b.gather(b.const("t", dt, [V, D]), b.const("ids", "i32", [R]), 0) }), {
        t: bytes,
        ids: Int32Array.from(ids),
      });
      expectExact(fromWords(out as Uint32Array, R * rowBytes), ref.rows!);
    });
  }

  for (const [D, ids] of [
    [32, [0]],
    [64, [3, 1, 3]],
    [160, [2, 0]],
  ] as const) {
    it(`gather_rows_q8_0_f32 D=${D} ids=${ids.join(",")}`, () => {
      const V = 4;
      const r = rng(D * 5 + ids.length);
      const bytes = randomBlocks(r, Q8_0, (V * D) / 32);
      const R = ids.length;
      const k = importedKernel("gather_rows_q8_0_f32");
      const out = poisoned(k, "out", R * D);
      run(k, {
        grid: grid1(R * D),
        buffers: { table: toWords(bytes), ids: Int32Array.from(ids), out },
        uniforms: { R, V, D },
      });
      const ref = oracle(
        (b) => ({ x: b.embedding(b.const("t", { packed: Q8_0 }, [V, D]), b.const("ids", "i32", [R])) }),
        { t: bytes, ids: Int32Array.from(ids) },
      );
      expectExact(out as Float32Array, ref.x!);
    });
  }

  for (const [V, D, ids] of [
    [3, 1, [2, 2]],
    [6, 45, [5, 0, 3]],
  ] as const) {
    it(`gather_rows_bf16_f32 V=${V} D=${D}`, () => {
      const table = randBf16(rng(V * D), V * D);
      const R = ids.length;
      const k = importedKernel("gather_rows_bf16_f32");
      const out = poisoned(k, "out", R * D);
      run(k, { grid: grid1(R * D), buffers: { table, ids: Int32Array.from(ids), out }, uniforms: { R, V, D } });
      const ref = oracle((b) => ({ x: b.embedding(b.const("t", "bf16", [V, D]), b.const("ids", "i32", [R])) }), {
        t: table,
        ids: Int32Array.from(ids),
      });
      expectExact(out as Float32Array, ref.x!);
    });
  }
});

describe("packed bf16 -> f32", () => {
  for (const n of [1, 2, 129, 1000]) {
    it(`convert_bf16x2_f32 n=${n} (incl. NaN, ±inf, subnormals)`, () => {
      const bits = randBf16(rng(n), n);
      const special = [0x7fc0, 0xff80, 0x7f80, 0x0001, 0x8000, 0x807f];
      special.forEach((s, j) => {
        if (j < n) bits[(j * 37) % n] = s;
      });
      const words = new Uint32Array(Math.ceil(n / 2));
      for (let i = 0; i < n; i++) words[i >> 1]! |= bits[i]! << ((i & 1) * 16);
      const k = importedKernel("convert_bf16x2_f32");
      const out = poisoned(k, "out", n);
      run(k, { grid: grid1(words.length), buffers: { in: words, out }, uniforms: { n } });
      const ref = oracle((b) => ({ y: b.cast(b.const("x", "bf16", [n]), "f32") }), { x: bits });
      expectExact(out as Float32Array, ref.y!);
    });
  }
});
