// The emitted Wasm runs in Node and agrees with the kernel-dsl interpreter on random inputs, for every
// test kernel (subgroups of one lane, the CPU target's caps).

import { describe, expect, test } from "vitest";
import { lowerWasm } from "@poot/codegen";
import { arrayClassFor, f32ToBf16Bits, interpret, type Kernel, type KernelBuffer } from "@poot/kernel-dsl";
import { ALL_KERNELS, atomics, bf16Scale, gemv, manyInputs, MANY, rowSum } from "./kernels.js";
import { WASM_CAPS } from "./helpers.js";
import { runWasm } from "./wasm-runner.js";

/** mulberry32: deterministic uniform [0, 1). */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface Case {
  readonly kernel: Kernel;
  readonly grid: [number, number, number];
  readonly uniforms: Record<string, number>;
  /** Fresh inputs (outputs poisoned) for one run. */
  readonly buffers: (r: () => number) => Record<string, KernelBuffer>;
  /** Relative tolerance for float outputs (0 = bit-exact). */
  readonly tol: number;
}

const cases: Case[] = [
  { kernel: gemv, grid: [7, 1, 1], uniforms: { k: 300 }, tol: 1e-5, buffers: (r) => ({ w: f32s(7 * 300, r), x: f32s(300, r), y: poisoned(7) }) },
  { kernel: rowSum, grid: [2, 1, 1], uniforms: { k: 37, rows: 100 }, tol: 1e-5, buffers: (r) => ({ a: f32s(100 * 37, r), out: poisoned(100) }) },
  {
    kernel: bf16Scale, grid: [3, 1, 1], uniforms: { n: 150, alpha: -1.75 }, tol: 0,
    buffers: (r) => ({
      pairs_in: Uint32Array.from({ length: 150 }, () => (f32ToBf16Bits(r() * 8 - 4) | (f32ToBf16Bits(r() * 1e3) << 16)) >>> 0),
      pairs_out: new Uint32Array(150),
      h_in: Uint16Array.from({ length: 150 }, () => f32ToBf16Bits(r() * 200 - 100)),
      h_out: new Uint16Array(150),
    }),
  },
  {
    kernel: manyInputs, grid: [4, 1, 1], uniforms: { n: 200 }, tol: 1e-6,
    buffers: (r) => ({ ...Object.fromEntries(Array.from({ length: MANY }, (_, j) => [`in${j}`, f32s(256, r)])), out: poisoned(256) }),
  },
  {
    kernel: atomics, grid: [5, 1, 1], uniforms: { n: 300 }, tol: 1e-6,
    buffers: (r) => ({ vals: Uint32Array.from({ length: 320 }, () => Math.floor(r() * 1000)), hist: new Uint32Array(16), total: new Float32Array(1) }),
  },
];

function f32s(n: number, r: () => number): Float32Array {
  return Float32Array.from({ length: n }, () => r() * 2 - 1);
}
function poisoned(n: number): Float32Array {
  return new Float32Array(n).fill(NaN);
}

describe("Wasm kernels match the interpreter", () => {
  test("every test kernel has a case", () => expect(cases.map((c) => c.kernel.name).sort()).toEqual(ALL_KERNELS.map((k) => k.name).sort()));
  for (const c of cases) {
    test(`${c.kernel.name} on random inputs`, () => {
      for (const seed of [1, 2, 3]) {
        const ref = c.buffers(rng(seed));
        const got = c.buffers(rng(seed));
        interpret(c.kernel, { grid: c.grid, buffers: ref, uniforms: c.uniforms, subgroupSize: 1 });
        const uniformTypes = Object.fromEntries(c.kernel.uniforms.map((u) => [u.name, u.type]));
        runWasm(lowerWasm(c.kernel, WASM_CAPS), { grid: c.grid, buffers: got, uniforms: c.uniforms, uniformTypes });
        for (const b of c.kernel.buffers) {
          if (b.access === "read") continue;
          const want = ref[b.name]!;
          const have = got[b.name]!;
          expect(have.constructor.name).toBe(arrayClassFor(b.elem).name);
          if (c.tol === 0 || !(want instanceof Float32Array)) {
            expect(Array.from(have as Float32Array), `${b.name} seed ${seed}`).toEqual(Array.from(want as Float32Array));
            continue;
          }
          const w = want as Float32Array;
          const h = have as Float32Array;
          const scale = Math.max(1, ...Array.from(w, (v) => (Number.isFinite(v) ? Math.abs(v) : 0)));
          w.forEach((v, i) => {
            if (Number.isNaN(v)) expect(h[i], `${b.name}[${i}] stays unwritten`).toBeNaN();
            else expect(Math.abs(h[i]! - v) / scale, `${b.name}[${i}] seed ${seed}`).toBeLessThanOrEqual(c.tol);
          });
        }
      }
    });
  }
});
