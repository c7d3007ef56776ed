// Test helpers: bindings for a graph from a seed, and the relative max-difference metric the issue
// specifies (max|Δ| / max|ref|) between the primitive graph's eval (the oracle) and the optimized graph's.

import { evaluate, numel, type EvalResult, type Graph, type OpTable, type Tensor } from "@poot/graph-ir";
import { randomData } from "./llama.js";

/** Random data for every const and state of a graph (weights ~U(-0.5, 0.5)); slots come from `slots`. */
export function bindingsFor(
  g: Graph,
  seed: number,
  slots: Record<string, ArrayLike<number>>,
): {
  consts: Record<string, Float32Array>;
  state: Record<string, Float32Array>;
  slots: Record<string, ArrayLike<number>>;
} {
  const consts: Record<string, Float32Array> = {},
    state: Record<string, Float32Array> = {};
  g.values.forEach((v, i) => {
    if (v.storage.kind === "const") consts[v.storage.key] = randomData(numel(v.shape), seed + i);
    if (v.storage.kind === "state") state[v.storage.key] = randomData(numel(v.shape), seed + 1000 + i);
  });
  return { consts, state, slots };
}

/** max|a - b| / max|b| over two tensors of one shape (NaN-aware: both NaN counts as equal). */
export function relDiff(a: Tensor, b: Tensor): number {
  if (a.data.length !== b.data.length) return Infinity;
  let num = 0,
    den = 0;
  for (let i = 0; i < a.data.length; i++) {
    const x = a.data[i]!,
      y = b.data[i]!;
    if (Number.isNaN(x) && Number.isNaN(y)) continue;
    num = Math.max(num, Math.abs(x - y));
    den = Math.max(den, Math.abs(y));
  }
  return den === 0 ? num : num / den;
}

/** Evaluates both graphs on the same bindings; returns the worst relative difference over outputs and states. */
export function compareEval(
  primitive: Graph,
  optimized: Graph,
  ops: OpTable,
  b: ReturnType<typeof bindingsFor>,
): { worst: number; ref: EvalResult; got: EvalResult } {
  const ref = evaluate(primitive, b);
  const got = evaluate(optimized, b, { ops });
  let worst = 0;
  for (const k of Object.keys(ref.outputs)) worst = Math.max(worst, relDiff(got.outputs[k]!, ref.outputs[k]!));
  for (const k of Object.keys(ref.state)) worst = Math.max(worst, relDiff(got.state[k]!, ref.state[k]!));
  return { worst, ref, got };
}

/** Ops of a graph's equations, counted. */
export function opCounts(g: Graph): Record<string, number> {
  const c: Record<string, number> = {};
  for (const e of g.eqns) c[e.op] = (c[e.op] ?? 0) + 1;
  return c;
}
