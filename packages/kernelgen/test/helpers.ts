// Test helpers: seeded data, the graph-ir float64 oracle (build a primitive graph, evaluate it), tolerance
// checks relative to Σ|terms|, and a poisoned-output launcher around the interpreter.

import { Builder, evaluate, f32ToBf16Bits } from "@poot/graph-ir";
import type { HostData, Ref } from "@poot/graph-ir";
import { arrayClassFor, interpret } from "@poot/kernel-dsl";
import type { InterpretLaunch, Kernel, KernelBuffer } from "@poot/kernel-dsl";
import { expect } from "vitest";

/** mulberry32: a small deterministic PRNG returning floats in [0, 1). */
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

/** n uniform f32 values in [-1, 1). */
export function randF32(r: () => number, n: number, scale = 1): Float32Array {
  return Float32Array.from({ length: n }, () => (r() * 2 - 1) * scale);
}

/** bf16 bits of n random values in [-1, 1). */
export function randBf16(r: () => number, n: number): Uint16Array {
  return Uint16Array.from({ length: n }, () => f32ToBf16Bits(r() * 2 - 1));
}

/** Builds a graph with `fn` (returning named outputs) and evaluates it with graph-ir's float64 oracle. */
export function oracle(
  fn: (b: Builder) => Record<string, Ref>,
  consts: Record<string, HostData>,
): Record<string, Float64Array | Int32Array | Uint32Array | Uint8Array> {
  const b = new Builder();
  for (const [name, ref] of Object.entries(fn(b))) b.output(name, ref);
  const { outputs } = evaluate(b.build(), { consts });
  return Object.fromEntries(Object.entries(outputs).map(([k, t]) => [k, t.data]));
}

/** Output buffers of `kernel` allocated and poisoned (NaN for floats, 0xDEADBEEF-ish for integers). */
export function poisoned(kernel: Kernel, name: string, n: number): KernelBuffer {
  const p = kernel.buffers.find((b) => b.name === name);
  if (p === undefined) throw new Error(`no buffer ${name} in ${kernel.name}`);
  const a = arrayClassFor(p.elem).make(n);
  if (a instanceof Float32Array) a.fill(NaN);
  else if (a instanceof Int32Array) a.fill(-559038737);
  else if (a instanceof Uint32Array) a.fill(0xdeadbeef);
  else if (a instanceof Uint16Array) a.fill(0x7fc1);
  else a.fill(0xa5);
  return a;
}

/** Runs the interpreter. */
export function run(kernel: Kernel, launch: InterpretLaunch): void {
  interpret(kernel, launch);
}

/** Expects |actual - expected| ≤ rel · scale + abs, elementwise, with a message naming the worst index. */
export function expectClose(
  actual: ArrayLike<number>,
  expected: ArrayLike<number>,
  scale: ArrayLike<number> | number,
  rel = 1e-5,
  abs = 1e-30,
): void {
  expect(actual.length).toBe(expected.length);
  let worst = -1;
  let worstErr = 0;
  for (let i = 0; i < expected.length; i++) {
    const a = actual[i] as number;
    const e = expected[i] as number;
    if (Object.is(a, e)) continue;
    const s = typeof scale === "number" ? scale : (scale[i] as number);
    const err = Math.abs(a - e) / (rel * s + abs);
    if (!(err <= 1)) {
      if (worst < 0 || !(err <= worstErr)) {
        worst = i;
        worstErr = err;
      }
    }
  }
  if (worst >= 0) {
    const s = typeof scale === "number" ? scale : (scale[worst] as number);
    expect.fail(`element ${worst}: got ${actual[worst]}, expected ${expected[worst]} (tolerance ${rel * s + abs})`);
  }
}

/** Expects exact equality, element by element, reporting the first mismatch. */
export function expectExact(actual: ArrayLike<number>, expected: ArrayLike<number>): void {
  expect(actual.length).toBe(expected.length);
  for (let i = 0; i < expected.length; i++) {
    if (!Object.is(actual[i], expected[i]) && actual[i] !== expected[i])
      expect.fail(`element ${i}: got ${actual[i]}, expected ${expected[i]}`);
  }
}
