// The warp-scope `mma` statement: the PTX fragment layout pinned against the ISA's tables, the interpreter against a
// plain f64 matrix product (tolerance: the hardware's summation order is unspecified), validation, printing, JSON
// and the launch errors (a subgroup that is not a whole warp, lanes that do not arrive together).

import { describe, expect, it } from "vitest";
import { kernel } from "./dsl.js";
import type { Builder } from "./dsl.js";
import type { Val } from "./dsl-val.js";
import { interpret } from "./interp.js";
import { parseKirJson, toKirJson } from "./json.js";
import { mmaACoord, mmaBCoord, mmaCCoord } from "./mma.js";
import { bf16BitsToF32, f16BitsToF32, f32ToBf16Bits, f32ToF16Bits } from "./numeric.js";
import { printKernel } from "./print.js";
import { validateKernel } from "./validate.js";
import type { Kernel, MmaInput } from "./ir.js";

describe("m16n8k16 fragment layout (PTX ISA 9.7.14.5.8, .f16/.bf16)", () => {
  it("matches the ISA's row/column formulas at sample lanes", () => {
    // lane 5: groupID 1, threadID_in_group 1.
    expect([0, 1, 2, 3, 4, 5, 6, 7].map((i) => mmaACoord(5, i))).toEqual([
      { row: 1, col: 2 },
      { row: 1, col: 3 },
      { row: 9, col: 2 },
      { row: 9, col: 3 },
      { row: 1, col: 10 },
      { row: 1, col: 11 },
      { row: 9, col: 10 },
      { row: 9, col: 11 },
    ]);
    expect([0, 1, 2, 3].map((i) => mmaBCoord(5, i))).toEqual([
      { row: 2, col: 1 },
      { row: 3, col: 1 },
      { row: 10, col: 1 },
      { row: 11, col: 1 },
    ]);
    expect([0, 1, 2, 3].map((i) => mmaCCoord(5, i))).toEqual([
      { row: 1, col: 2 },
      { row: 1, col: 3 },
      { row: 9, col: 2 },
      { row: 9, col: 3 },
    ]);
    // lane 31: groupID 7, threadID_in_group 3.
    expect(mmaACoord(31, 7)).toEqual({ row: 15, col: 15 });
    expect(mmaBCoord(31, 3)).toEqual({ row: 15, col: 7 });
    expect(mmaCCoord(31, 3)).toEqual({ row: 15, col: 7 });
  });

  it("covers every element of A, B and C exactly once over the 32 lanes", () => {
    const seen = (
      n: number,
      f: (lane: number, i: number) => { row: number; col: number },
      cols: number,
      per: number,
    ): number[] => {
      const hits = new Array<number>(n).fill(0);
      for (let lane = 0; lane < 32; lane++)
        for (let i = 0; i < per; i++) {
          const { row, col } = f(lane, i);
          hits[row * cols + col]! += 1;
        }
      return hits;
    };
    expect(seen(256, mmaACoord, 16, 8).every((h) => h === 1)).toBe(true);
    expect(seen(128, mmaBCoord, 8, 4).every((h) => h === 1)).toBe(true);
    expect(seen(128, mmaCCoord, 8, 4).every((h) => h === 1)).toBe(true);
  });
});

/** Lane fragment coordinates written as IR, independently of mma.ts: g = lane >> 2, t = lane & 3. */
function tileKernel(input: MmaInput, warps: number): Kernel {
  return kernel(`mma_tiles_${input}`, { workgroupSize: [32 * warps, 1, 1] }, (b: Builder) => {
    const { buffer, let_, vec, pack, mma, subgroupLane, subgroupId } = b;
    const A = buffer("A", input, "read");
    const B = buffer("B", input, "read");
    const C = buffer("C", "f32", "read");
    const D = buffer("D", "f32", "write");
    const lane = let_(subgroupLane, "lane");
    const w = let_(subgroupId, "w");
    const g = let_(lane.shr(2), "g");
    const t = let_(lane.and(3), "t");
    const aAt = (row: Val<"u32">, col: Val<"u32">): Val<"f32"> => A.at(w.mul(256).add(row.mul(16)).add(col));
    const bAt = (k: Val<"u32">, n: Val<"u32">): Val<"f32"> => B.at(w.mul(128).add(k.mul(8)).add(n));
    const cIdx = (row: Val<"u32">, col: Val<"u32">): Val<"u32"> => w.mul(128).add(row.mul(8)).add(col);
    const fmt = input === "bf16" ? "bf16x2" : "f16x2";
    const pair = (x: Val<"f32">, y: Val<"f32">): Val<"u32"> => pack(fmt, vec("vec2<f32>", x, y));
    const words: Val<"u32">[] = [];
    for (const [dr, dc] of [
      [0, 0],
      [8, 0],
      [0, 8],
      [8, 8],
    ] as const) {
      const r = g.add(dr),
        c = t.mul(2).add(dc);
      words.push(let_(pair(aAt(r, c), aAt(r, c.add(1))), "aw"));
    }
    const bw = [0, 8].map((dk) => let_(pair(bAt(t.mul(2).add(dk), g), bAt(t.mul(2).add(dk + 1), g)), "bw"));
    const cv = [0, 8].flatMap((dr) => [0, 1].map((dc) => C.at(cIdx(g.add(dr), t.mul(2).add(dc)))));
    const d = mma(input, vec("vec4<u32>", ...words), vec("vec2<u32>", ...bw), vec("vec4<f32>", ...cv));
    [0, 8].forEach((dr, h) => [0, 1].forEach((dc) => D.set(cIdx(g.add(dr), t.mul(2).add(dc)), d.lane(2 * h + dc))));
  });
}

function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

describe("interpret: mma", () => {
  for (const input of ["bf16", "f16"] as const) {
    it(`computes D = A·B + C for ${input} tiles in two warps (vs an f64 product)`, () => {
      const warps = 2;
      const r = rng(input === "bf16" ? 7 : 11);
      const toBits = input === "bf16" ? f32ToBf16Bits : f32ToF16Bits;
      const fromBits = input === "bf16" ? bf16BitsToF32 : f16BitsToF32;
      const A = Uint16Array.from({ length: warps * 256 }, () => toBits(r() * 4 - 2));
      const B = Uint16Array.from({ length: warps * 128 }, () => toBits(r() * 4 - 2));
      const C = Float32Array.from({ length: warps * 128 }, () => r() * 8 - 4);
      const D = new Float32Array(warps * 128).fill(Number.NaN);
      interpret(tileKernel(input, warps), { grid: [1], buffers: { A, B, C, D }, subgroupSize: 32 });
      let maxErr = 0;
      for (let w = 0; w < warps; w++)
        for (let m = 0; m < 16; m++)
          for (let n = 0; n < 8; n++) {
            let want = C[w * 128 + m * 8 + n] as number;
            for (let k = 0; k < 16; k++)
              want += fromBits(A[w * 256 + m * 16 + k] as number) * fromBits(B[w * 128 + k * 8 + n] as number);
            maxErr = Math.max(maxErr, Math.abs((D[w * 128 + m * 8 + n] as number) - want));
          }
      expect(maxErr).toBeLessThan(1e-5);
    });
  }

  it("refuses a subgroup that is not a 32-lane warp", () => {
    const k = tileKernel("bf16", 1);
    const buffers = {
      A: new Uint16Array(512),
      B: new Uint16Array(256),
      C: new Float32Array(256),
      D: new Float32Array(256),
    };
    expect(() => interpret(k, { grid: [1], buffers, subgroupSize: 16 })).toThrow(
      expect.objectContaining({ code: "bad_launch" }),
    );
  });

  it("reports lanes that do not reach the mma together", () => {
    const k = kernel(
      "mma_diverge",
      { workgroupSize: [32, 1, 1] },
      ({ buffer, if_, mma, vec, u32, f32, subgroupLane }) => {
        const D = buffer("D", "f32", "write");
        if_(subgroupLane.lt(16), () => {
          const d = mma(
            "bf16",
            vec("vec4<u32>", u32(0), u32(0), u32(0), u32(0)),
            vec("vec2<u32>", u32(0), u32(0)),
            vec("vec4<f32>", f32(0), f32(0), f32(0), f32(0)),
          );
          D.set(subgroupLane, d.lane(0));
        });
      },
    );
    expect(() => interpret(k, { grid: [1], buffers: { D: new Float32Array(32) }, subgroupSize: 32 })).toThrow(
      expect.objectContaining({ code: "subgroup_divergence" }),
    );
  });
});

describe("mma in the IR", () => {
  const k = tileKernel("f16", 1);
  it("prints and round-trips through .kir.json", () => {
    expect(printKernel(k)).toMatch(/let mma\w*: vec4<f32> = mma_m16n8k16_f16\(vec4<u32>\(/);
    expect(parseKirJson(toKirJson(k))).toEqual(k);
  });

  it("rejects wrong fragment types and unknown shapes or inputs", () => {
    const body = k.body.map((s) => (s.s === "mma" ? { ...s, shape: "m16n8k8", input: "f32", b: s.a } : s));
    const issues = validateKernel({ ...k, body } as unknown as Kernel);
    expect(issues.map((i) => i.code).sort()).toEqual(["bad_mma", "bad_mma", "type_mismatch"]);
    expect(issues.find((i) => i.code === "type_mismatch")?.path).toMatch(/^body\[\d+\]\.b$/);
  });
});
