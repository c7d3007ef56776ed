// The AMD `mma` shapes: MMA_LAYOUTS against the layouts as AMD documents them, written here the other way round
// (matrix element -> lane and register item, as AMD's Matrix Instruction Calculator prints them for
// v_mfma_f32_16x16x16_f16, and as the RDNA3 ISA guide's WMMA section describes the 16x16x16 registers), and the
// interpreter's arithmetic against an f64 product on random tiles, through a kernel that runs in the interpreter.

import { describe, expect, it } from "vitest";
import { kernel } from "./dsl.js";
import type { Builder } from "./dsl.js";
import { interpret } from "./interp.js";
import type { MmaInput, MmaShape } from "./ir.js";
import { MMA_LAYOUTS, mmaOperandTypes, mmaRun } from "./mma.js";
import { bf16BitsToF32, f16BitsToF32, f32ToBf16Bits, f32ToF16Bits } from "./numeric.js";
import { validateKernel } from "./validate.js";

type Where = { lane: number; item: number };

/** MFMA 16x16x16 (CDNA2/3), per AMD's calculator: A[i][k] -> lane i + 16·⌊k/4⌋, item k mod 4; B[k][j] and D[i][j] likewise. */
const MFMA_DOC = {
  a: (i: number, k: number): Where => ({ lane: i + 16 * Math.floor(k / 4), item: k % 4 }),
  b: (k: number, j: number): Where => ({ lane: j + 16 * Math.floor(k / 4), item: k % 4 }),
  d: (i: number, j: number): Where => ({ lane: j + 16 * Math.floor(i / 4), item: i % 4 }),
};

/**
 * RDNA3 WMMA 16x16x16 in wave32 (ISA guide, "Wave Matrix Multiply-Accumulate"): lane l < 16 holds row l of A (item k
 * = column k) and column l of B (item k = row k), lanes 16-31 a copy; the f32 D has column l mod 16 in lane l, item
 * v = row 2v + ⌊l/16⌋.
 */
const WMMA_DOC = {
  d: (i: number, j: number): Where => ({ lane: j + 16 * (i % 2), item: Math.floor(i / 2) }),
};

function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

describe("m16n16k16_mfma layout (v_mfma_f32_16x16x16_f16 / _bf16, wave64)", () => {
  const L = MMA_LAYOUTS.m16n16k16_mfma;
  it("is AMD's documented register layout for A, B and D, element by element", () => {
    for (let lane = 0; lane < 64; lane++)
      for (let item = 0; item < 4; item++) {
        const a = L.a(lane, item);
        expect(MFMA_DOC.a(a.row, a.col)).toEqual({ lane, item });
        const b = L.b(lane, item);
        expect(MFMA_DOC.b(b.row, b.col)).toEqual({ lane, item });
        const c = L.c(lane, item);
        expect(MFMA_DOC.d(c.row, c.col)).toEqual({ lane, item });
      }
    expect(mmaOperandTypes("m16n16k16_mfma")).toEqual({ a: "vec2<u32>", b: "vec2<u32>", c: "vec4<f32>" });
  });
});

describe("m16n8k16_wmma layout (a 16x8x16 product on v_wmma_f32_16x16x16, wave32)", () => {
  const L = MMA_LAYOUTS.m16n8k16_wmma;
  it("holds every A, B and D element exactly once over the 32 lanes", () => {
    const count = (
      f: (lane: number, i: number) => { row: number; col: number },
      per: number,
      cols: number,
      n: number,
    ) => {
      const hits = new Array<number>(n).fill(0);
      for (let lane = 0; lane < 32; lane++)
        for (let i = 0; i < per; i++) {
          const { row, col } = f(lane, i);
          hits[row * cols + col]! += 1;
        }
      return hits;
    };
    expect(count(L.a, 8, 16, 256).every((h) => h === 1)).toBe(true);
    expect(count(L.b, 4, 8, 128).every((h) => h === 1)).toBe(true);
    expect(count(L.c, 4, 8, 128).every((h) => h === 1)).toBe(true);
  });

  it("keeps each accumulator in the lane where WMMA's D register has it (B's 8 columns duplicated into 16)", () => {
    // Lane l keeps items 4q..4q+3 (q = bit 3 of l) of its 8-item WMMA D: column l mod 16 is B column (l mod 16) mod 8.
    for (let lane = 0; lane < 32; lane++)
      for (let i = 0; i < 4; i++) {
        const { row, col } = L.c(lane, i);
        const q = (lane >> 3) & 1;
        const here = WMMA_DOC.d(row, col + 8 * q);
        expect(here).toEqual({ lane, item: 4 * q + i });
      }
  });
});

/** A kernel loading each lane's fragments at the layout's coordinates, one mma, and storing D (tiles per subgroup). */
function tileKernel(shape: MmaShape, input: MmaInput, groups: number) {
  const L = MMA_LAYOUTS[shape];
  const ty = mmaOperandTypes(shape);
  return kernel(`mma_${shape}_${input}`, { workgroupSize: [L.lanes * groups, 1, 1] }, (b: Builder) => {
    const { buffer, let_, vec, pack, mma, subgroupLane, subgroupId } = b;
    const A = buffer("A", input, "read");
    const B = buffer("B", input, "read");
    const C = buffer("C", "f32", "read");
    const D = buffer("D", "f32", "write");
    const lane = let_(subgroupLane, "lane");
    const w = let_(subgroupId, "w");
    const fmt = input === "bf16" ? "bf16x2" : "f16x2";
    // Coordinates come from a per-lane table in a buffer-free form: select over the lanes would be long, so the
    // kernel reads index tables (built from MMA_LAYOUTS) that the host passes in.
    const AI = buffer("AI", "u32", "read");
    const BI = buffer("BI", "u32", "read");
    const CI = buffer("CI", "u32", "read");
    const words = (src: typeof A, idx: typeof AI, elems: number, tile: number) =>
      Array.from({ length: elems / 2 }, (_, j) =>
        let_(
          pack(
            fmt,
            vec(
              "vec2<f32>",
              src.at(w.mul(tile).add(idx.at(lane.mul(elems).add(2 * j)))),
              src.at(w.mul(tile).add(idx.at(lane.mul(elems).add(2 * j + 1)))),
            ),
          ),
          "w",
        ),
      );
    const aw = words(A, AI, L.aElems, L.m * L.k);
    const bw = words(B, BI, L.bElems, L.k * L.n);
    const ci = [0, 1, 2, 3].map((i) => let_(w.mul(L.m * L.n).add(CI.at(lane.mul(4).add(i))), "ci"));
    const av =
      ty.a === "vec2<u32>" ? vec("vec2<u32>", aw[0]!, aw[1]!) : vec("vec4<u32>", aw[0]!, aw[1]!, aw[2]!, aw[3]!);
    const bv =
      ty.b === "vec2<u32>" ? vec("vec2<u32>", bw[0]!, bw[1]!) : vec("vec4<u32>", bw[0]!, bw[1]!, bw[2]!, bw[3]!);
    const d = mma(input, av, bv, vec("vec4<f32>", ...ci.map((i) => C.at(i))), shape);
    ci.forEach((i, q) => D.set(i, d.lane(q)));
  });
}

describe("interpret: the AMD mma shapes", () => {
  for (const shape of ["m16n16k16_mfma", "m16n8k16_wmma"] as const)
    for (const input of ["bf16", "f16"] as const) {
      it(`${shape} ${input}: D = A·B + C in two subgroups (vs an f64 product)`, () => {
        const L = MMA_LAYOUTS[shape];
        const groups = 2;
        const r = rng(shape.length * 31 + (input === "bf16" ? 7 : 11));
        const toBits = input === "bf16" ? f32ToBf16Bits : f32ToF16Bits;
        const fromBits = input === "bf16" ? bf16BitsToF32 : f16BitsToF32;
        const A = Uint16Array.from({ length: groups * L.m * L.k }, () => toBits(r() * 4 - 2));
        const B = Uint16Array.from({ length: groups * L.k * L.n }, () => toBits(r() * 4 - 2));
        const C = Float32Array.from({ length: groups * L.m * L.n }, () => r() * 8 - 4);
        const D = new Float32Array(groups * L.m * L.n).fill(Number.NaN);
        const table = (f: typeof L.a, per: number, cols: number) =>
          Uint32Array.from({ length: L.lanes * per }, (_, x) => {
            const { row, col } = f(Math.floor(x / per), x % per);
            return row * cols + col;
          });
        const k = tileKernel(shape, input, groups);
        expect(validateKernel(k)).toEqual([]);
        interpret(k, {
          grid: [1],
          buffers: {
            A,
            B,
            C,
            D,
            AI: table(L.a, L.aElems, L.k),
            BI: table(L.b, L.bElems, L.n),
            CI: table(L.c, 4, L.n),
          },
          subgroupSize: L.lanes,
        });
        let maxErr = 0;
        for (let g = 0; g < groups; g++)
          for (let m = 0; m < L.m; m++)
            for (let n = 0; n < L.n; n++) {
              let want = C[g * L.m * L.n + m * L.n + n] as number;
              for (let kk = 0; kk < L.k; kk++)
                want +=
                  fromBits(A[g * L.m * L.k + m * L.k + kk] as number) *
                  fromBits(B[g * L.k * L.n + kk * L.n + n] as number);
              maxErr = Math.max(maxErr, Math.abs((D[g * L.m * L.n + m * L.n + n] as number) - want));
            }
        expect(maxErr).toBeLessThan(1e-5);
      });
    }

  it("m16n16k16_mfma needs 64-lane subgroups: a 32-lane launch is bad_launch naming the shape", () => {
    const k = tileKernel("m16n16k16_mfma", "bf16", 1);
    const buffers = {
      A: new Uint16Array(512),
      B: new Uint16Array(512),
      C: new Float32Array(512),
      D: new Float32Array(512),
      AI: new Uint32Array(512),
      BI: new Uint32Array(512),
      CI: new Uint32Array(512),
    };
    expect(() => interpret(k, { grid: [1], buffers, subgroupSize: 32 })).toThrow(/mma m16n16k16_mfma .* 64 lanes/);
  });

  it("mmaRun equals a float64 product for every shape (the interpreter's exact-product, f32-sum rule)", () => {
    for (const shape of Object.keys(MMA_LAYOUTS) as MmaShape[]) {
      const L = MMA_LAYOUTS[shape];
      const r = rng(5);
      const A = Array.from({ length: L.m * L.k }, () => f32ToBf16Bits(r() * 2 - 1));
      const B = Array.from({ length: L.k * L.n }, () => f32ToBf16Bits(r() * 2 - 1));
      const frag = (f: typeof L.a, per: number, cols: number, src: number[]) =>
        Array.from({ length: L.lanes }, (_, lane) =>
          Array.from({ length: per / 2 }, (_, j) => {
            const lo = f(lane, 2 * j),
              hi = f(lane, 2 * j + 1);
            return ((src[lo.row * cols + lo.col] as number) | ((src[hi.row * cols + hi.col] as number) << 16)) >>> 0;
          }),
        );
      const c = Array.from({ length: L.lanes }, () => [0, 0, 0, 0]);
      const d = mmaRun(shape, "bf16", frag(L.a, L.aElems, L.k, A), frag(L.b, L.bElems, L.n, B), c);
      for (let lane = 0; lane < L.lanes; lane++)
        for (let i = 0; i < 4; i++) {
          const { row, col } = L.c(lane, i);
          let want = 0;
          for (let kk = 0; kk < L.k; kk++)
            want += bf16BitsToF32(A[row * L.k + kk] as number) * bf16BitsToF32(B[kk * L.n + col] as number);
          expect(Math.abs((d[lane] as number[])[i]! - want)).toBeLessThan(1e-5);
        }
    }
  });
});
