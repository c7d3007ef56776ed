// The small graphs of the conformance suite (elementwise, reduce, matmul, gather, movement, State) with
// seeded data for several steps; the suite runs them on a backend and compares each step with `evaluate`.
import { Builder, f32ToBf16Bits, f32ToF16Bits, type Graph, type HostData } from "@poot/graph-ir";

/** Weight storage dtypes a backend can be asked to conform on. */
export type ConformanceDType = "f32" | "f16" | "bf16";

/** One conformance case: a graph, its weights, and the slot data of each step (slots change between steps). */
export interface ConformanceCase {
  /** Case name. */
  readonly name: string;
  /** The graph. */
  readonly graph: Graph;
  /** Weights by Const key (f32 numbers; the graph's Const dtype says how they are stored). */
  readonly weights: Readonly<Record<string, HostData>>;
  /** Slot data per step. */
  readonly steps: readonly Readonly<Record<string, ArrayLike<number>>>[];
}

/** Seeded uniform numbers in [lo, hi) (mulberry32), so every backend sees the same data. */
export function seededFloats(seed: number, n: number, lo = -1, hi = 1): Float32Array {
  let a = seed >>> 0;
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    out[i] = lo + (hi - lo) * (((t ^ (t >>> 14)) >>> 0) / 4294967296);
  }
  return out;
}

/** Weights as a checkpoint stores them: f32 numbers, or f16/bf16 bits. */
export function stored(d: ConformanceDType, values: Float32Array): HostData {
  if (d === "f32") return values;
  const bits = d === "bf16" ? f32ToBf16Bits : f32ToF16Bits;
  return Uint16Array.from(values, (v) => bits(v));
}

/** Elementwise: binary, unary, compare/select and a cast into the storage dtype on the way out. */
function elementwise(d: ConformanceDType): ConformanceCase {
  const b = new Builder();
  const x = b.slot("Token", "x", "f32", [4, 8]);
  const w = b.f32(b.const("w", d, [4, 8]));
  const y = b.add(b.tanh(b.mul(x, w)), b.exp(b.neg(x)));
  b.output("y", y);
  b.output("z", b.select(b.cmp("Gt", x, 0), b.sqrt(b.add(b.mul(x, x), 1)), b.div(w, 3)));
  b.output("stored", b.cast(y, d));
  return {
    name: `elementwise ${d}`,
    graph: b.build(),
    weights: { w: stored(d, seededFloats(1, 32)) },
    steps: [1, 2, 3].map((s) => ({ x: seededFloats(10 + s, 32, -3, 3) })),
  };
}

/** Reduce: last-axis keepdim sum, a leading-axis max, and an all-axes min. */
function reduce(d: ConformanceDType): ConformanceCase {
  const b = new Builder();
  const x = b.add(b.slot("Token", "x", "f32", [3, 5, 7]), b.f32(b.const("bias", d, [7])));
  b.output("sum", b.sum(x, [2], true));
  b.output("max", b.reduce("max", x, [0]));
  b.output("min", b.reduce("min", x, [0, 1, 2]));
  return {
    name: `reduce ${d}`,
    graph: b.build(),
    weights: { bias: stored(d, seededFloats(2, 7)) },
    steps: [1, 2].map((s) => ({ x: seededFloats(20 + s, 105, -5, 5) })),
  };
}

/** MatMul: a linear layer over a stored weight (x @ W^T), batch-broadcast products, an odd contraction length. */
function matmul(d: ConformanceDType): ConformanceCase {
  const b = new Builder();
  const x = b.slot("Token", "x", "f32", [3, 16]);
  b.output("linear", b.linear(x, b.const("w", d, [8, 16])));
  const a = b.slot("Token", "a", "f32", [2, 3, 4]);
  b.output("batched", b.matmul(a, b.f32(b.const("m", d, [1, 4, 5]))));
  // K = 7 is not a multiple of 4 (blocked kernels' remainder path); a rank-2 right operand broadcasts.
  b.output("odd", b.matmul(b.slot("Token", "c", "f32", [2, 3, 7]), b.f32(b.const("r", d, [7, 5]))));
  return {
    name: `matmul ${d}`,
    graph: b.build(),
    weights: {
      w: stored(d, seededFloats(3, 128)),
      m: stored(d, seededFloats(4, 20)),
      r: stored(d, seededFloats(7, 35)),
    },
    steps: [1, 2].map((s) => ({
      x: seededFloats(30 + s, 48),
      a: seededFloats(40 + s, 24),
      c: seededFloats(70 + s, 42),
    })),
  };
}

/** Gather: an embedding lookup of a stored table at slot ids (ids change every step). */
function gather(d: ConformanceDType): ConformanceCase {
  const b = new Builder();
  const ids = b.slot("Token", "ids", "i32", [4]);
  b.output("rows", b.embedding(b.const("table", d, [10, 6]), ids));
  b.output("cols", b.gather(b.slot("Token", "x", "f32", [3, 5]), b.computed("i32", [2], new Int32Array([4, 1])), 1));
  return {
    name: `gather ${d}`,
    graph: b.build(),
    weights: { table: stored(d, seededFloats(5, 60)) },
    steps: [
      [0, 9, 3, 3],
      [7, 2, 0, 5],
      [1, 1, 1, 8],
    ].map((v, s) => ({ ids: v, x: seededFloats(50 + s, 15) })),
  };
}

/**
 * State: a cache [2, 8, 4] written with DynamicUpdateSlice at the Pos slot across steps (a KV cache in
 * miniature) and an accumulator State; outputs read the updated state.
 */
function state(d: ConformanceDType): ConformanceCase {
  const b = new Builder();
  const pos = b.slot("Pos", "pos", "i32", [1]);
  const x = b.slot("Token", "x", "f32", [2, 1, 4]);
  const cache = b.state("cache", "f32", [2, 8, 4]);
  const start = b.reshape(pos, []);
  const zero = b.computed("i32", [], new Int32Array([0]));
  const next = b.dynamicUpdateSlice(cache, b.mul(x, b.f32(b.const("scale", d, [4]))), [zero, start, zero]);
  b.setState(cache, next);
  const acc = b.state("acc", "f32", [2, 4]);
  const accNext = b.add(acc, b.reshape(x, [2, 4]));
  b.setState(acc, accNext);
  b.output("colsum", b.sum(next, [1]));
  b.output("acc", accNext);
  const positions = [0, 1, 2, 5, 1];
  return {
    name: `state ${d}`,
    graph: b.build(),
    weights: { scale: stored(d, seededFloats(6, 4, 0.5, 2)) },
    steps: positions.map((p, s) => ({ pos: [p], x: seededFloats(60 + s, 8) })),
  };
}

/**
 * A paged KV write in miniature: a page pool [6, 2, 4] written with one DynamicUpdateSlice per token of the step, each
 * at its own slot, in order (one region: its kernel writes only the windows, decision 2450). A step writing one slot
 * twice keeps the later token's row.
 */
function pagedWrite(d: ConformanceDType): ConformanceCase {
  const b = new Builder();
  const slots = b.slot("Pos", "slots", "i32", [3]);
  const x = b.mul(b.slot("Token", "x", "f32", [3, 2, 4]), b.f32(b.const("scale", d, [4])));
  const pool = b.state("pool", "f32", [6, 2, 4]);
  const zero = b.computed("i32", [], new Int32Array([0]));
  let next = pool;
  for (let t = 0; t < 3; t++) {
    const at = b.reshape(b.slice(slots, [t], [t + 1]), []);
    next = b.dynamicUpdateSlice(next, b.slice(x, [t, 0, 0], [t + 1, 2, 4]), [at, zero, zero]);
  }
  b.setState(pool, next);
  b.output("rows", b.sum(next, [2]));
  const steps = [
    [0, 1, 2],
    [3, 3, 5],
    [5, 0, 4],
  ];
  return {
    name: `paged write ${d}`,
    graph: b.build(),
    weights: { scale: stored(d, seededFloats(7, 4, 0.5, 2)) },
    steps: steps.map((v, s) => ({ slots: v, x: seededFloats(70 + s, 24) })),
  };
}

/** Movement of step data: transposes (inner axis moved and kept), broadcasts (leading and inner axes), concat. */
function movement(d: ConformanceDType): ConformanceCase {
  const b = new Builder();
  const x = b.add(b.slot("Token", "x", "f32", [2, 3, 4]), b.f32(b.const("bias", d, [4])));
  b.output("t201", b.transpose(x, [2, 0, 1]));
  b.output("t102", b.transpose(x, [1, 0, 2]));
  const col = b.slot("Token", "col", "f32", [3, 1]);
  b.output("bcast", b.broadcast(col, [2, 3, 4]));
  b.output("cat", b.concat([x, b.broadcast(b.reshape(col, [1, 3, 1]), [2, 3, 1])], 2));
  return {
    name: `movement ${d}`,
    graph: b.build(),
    weights: { bias: stored(d, seededFloats(8, 4)) },
    steps: [1, 2].map((s) => ({ x: seededFloats(80 + s, 24), col: seededFloats(90 + s, 3) })),
  };
}

/** Every case for one weight dtype. */
export function conformanceCases(d: ConformanceDType): ConformanceCase[] {
  return [elementwise(d), reduce(d), matmul(d), gather(d), movement(d), state(d), pagedWrite(d)];
}
