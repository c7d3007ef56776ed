// Launch cases for the run tests: random inputs per kernel, grids, uniforms and output tolerances,
// plus the comparison against the kernel-dsl interpreter's results.

import { expect } from "vitest";
import { arrayClassFor, f32ToBf16Bits, type Kernel, type KernelBuffer } from "@poot/kernel-dsl";
import { atomics, bf16Scale, gemv, manyInputs, MANY, rowSum, vec4Affine } from "./kernels.js";
import { moreAtomics, narrow, nonFinite, scalarOps, subgroupOps } from "./coverage-kernels.js";
import { f32ToF16Bits } from "@poot/kernel-dsl";

/** mulberry32: deterministic uniform [0, 1). */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export interface Case {
  readonly kernel: Kernel;
  readonly grid: [number, number, number];
  readonly uniforms: Record<string, number>;
  /** Fresh inputs (outputs poisoned) for one run. */
  readonly buffers: (r: () => number) => Record<string, KernelBuffer>;
  /** Relative tolerance for float outputs (0 = bit-exact). */
  readonly tol: number;
}

export const cases: Case[] = [
  {
    kernel: gemv,
    grid: [7, 1, 1],
    uniforms: { k: 300 },
    tol: 1e-5,
    buffers: (r) => ({ w: f32s(7 * 300, r), x: f32s(300, r), y: poisoned(7) }),
  },
  {
    kernel: rowSum,
    grid: [2, 1, 1],
    uniforms: { k: 37, rows: 100 },
    tol: 1e-5,
    buffers: (r) => ({ a: f32s(100 * 37, r), out: poisoned(100) }),
  },
  {
    kernel: bf16Scale,
    grid: [3, 1, 1],
    uniforms: { n: 150, alpha: -1.75 },
    tol: 0,
    buffers: (r) => ({
      pairs_in: Uint32Array.from(
        { length: 150 },
        () => (f32ToBf16Bits(r() * 8 - 4) | (f32ToBf16Bits(r() * 1e3) << 16)) >>> 0,
      ),
      pairs_out: new Uint32Array(150),
      h_in: Uint16Array.from({ length: 150 }, () => f32ToBf16Bits(r() * 200 - 100)),
      h_out: new Uint16Array(150),
    }),
  },
  {
    kernel: manyInputs,
    grid: [4, 1, 1],
    uniforms: { n: 200 },
    tol: 1e-6,
    buffers: (r) => ({
      ...Object.fromEntries(Array.from({ length: MANY }, (_, j) => [`in${j}`, f32s(256, r)])),
      out: poisoned(256),
    }),
  },
  {
    kernel: atomics,
    grid: [5, 1, 1],
    uniforms: { n: 300 },
    tol: 1e-6,
    buffers: (r) => ({
      vals: Uint32Array.from({ length: 320 }, () => Math.floor(r() * 1000)),
      hist: new Uint32Array(16),
      total: new Float32Array(1),
    }),
  },
  {
    kernel: vec4Affine,
    grid: [2, 1, 1],
    uniforms: { n: 50, s: 0.5 },
    tol: 0,
    buffers: (r) => ({ src: f32s(4 * 64, r), dst: poisoned(4 * 64), lane0: poisoned(64) }),
  },
];

/** Cases for the coverage kernels; `subgroupOps` needs more than one lane, so the Wasm run skips it. */
export const coverageCases: Case[] = [
  {
    kernel: scalarOps,
    grid: [3, 1, 1],
    uniforms: {},
    tol: 2e-5,
    buffers: (r) => ({
      fin: Float32Array.from({ length: 48 }, () => (r() * 2 - 1) * 4),
      iin: Int32Array.from({ length: 48 }, () => Math.floor((r() * 2 - 1) * 2 ** 31)),
      uin: Uint32Array.from({ length: 48 }, () => Math.floor(r() * 2 ** 32)),
      fout: poisoned(48 * 5),
      iout: new Int32Array(48 * 3),
      uout: new Uint32Array(48 * 4),
    }),
  },
  {
    kernel: narrow,
    grid: [3, 1, 1],
    uniforms: { n: 45 },
    tol: 0,
    buffers: (r) => ({
      h: Uint16Array.from({ length: 48 }, () => f32ToF16Bits((r() * 2 - 1) * 100)),
      h_out: new Uint16Array(48),
      bytes: Uint8Array.from({ length: 48 }, () => Math.floor(r() * 256)),
      sbytes: Int8Array.from({ length: 48 }, () => Math.floor(r() * 256) - 128),
      b_out: new Uint8Array(48),
      s_out: new Int8Array(48),
      pairs: new Uint32Array(48),
    }),
  },
  {
    kernel: moreAtomics,
    grid: [4, 1, 1],
    uniforms: { n: 120 },
    tol: 0,
    buffers: (r) => ({
      vals: Int32Array.from({ length: 128 }, () => Math.floor((r() * 2 - 1) * 2 ** 31)),
      imax: Int32Array.of(-2147483648),
      umin: Uint32Array.of(0xffffffff),
      slot: new Uint32Array(3),
    }),
  },
  {
    kernel: subgroupOps,
    grid: [2, 1, 1],
    uniforms: {},
    tol: 0,
    buffers: (r) => ({
      src: Float32Array.from({ length: 64 }, () => Math.round((r() * 2 - 1) * 100)),
      out: poisoned(64),
    }),
  },
  {
    kernel: nonFinite,
    grid: [2, 1, 1],
    uniforms: {},
    tol: 0,
    buffers: (r) => ({ src: f32s(32, r), out: new Float32Array(128) }),
  },
];

/** n uniform random f32 in [-1, 1). */
export function f32s(n: number, r: () => number): Float32Array {
  return Float32Array.from({ length: n }, () => r() * 2 - 1);
}
/** n NaNs: outputs that must be written. */
function poisoned(n: number): Float32Array {
  return new Float32Array(n).fill(NaN);
}

/** Compares the writable buffers of a run against the interpreter's. */
export function expectMatches(
  c: Case,
  ref: Record<string, KernelBuffer>,
  got: Record<string, KernelBuffer>,
  label: string,
): void {
  for (const b of c.kernel.buffers) {
    if (b.access === "read") continue;
    const want = ref[b.name]!;
    const have = got[b.name]!;
    expect(have.constructor.name).toBe(arrayClassFor(b.elem).name);
    if (c.tol === 0 || !(want instanceof Float32Array)) {
      expect(Array.from(have as Float32Array), `${b.name} ${label}`).toEqual(Array.from(want as Float32Array));
      continue;
    }
    const w = want as Float32Array;
    const h = have as Float32Array;
    const scale = Math.max(1, ...Array.from(w, (v) => (Number.isFinite(v) ? Math.abs(v) : 0)));
    w.forEach((v, i) => {
      if (Number.isNaN(v)) expect(h[i], `${b.name}[${i}] stays unwritten`).toBeNaN();
      else expect(Math.abs(h[i]! - v) / scale, `${b.name}[${i}] ${label}`).toBeLessThanOrEqual(c.tol);
    });
  }
}
