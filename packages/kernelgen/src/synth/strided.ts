// Plain strided kernels for the requests the synthesizers decline today (reductions over leading or several axes,
// contractions whose B broadcasts over batch dims): one thread per output element, exact index math. A target names
// them as its lowering's fallback (Vulkan does); they are written in the kernel DSL, so any target can.

import { numel, type ReduceParams } from "@poot/graph-ir";
import type { Access, KernelRequest } from "@poot/graph-plan";
import type { RequestKernel } from "../adapter/request.js";
import { grid2d, type SynthCaps } from "../caps.js";
import { kernel, type Builder, type ElemType, type Val } from "@poot/kernel-dsl";

const WG = 64;
const FLOATS = ["f32", "f16", "bf16"];

/** The element index of `coords` (u32 values, one per axis of `a`) in `a`'s buffer. */
function index(k: Builder, a: Access, coords: readonly Val<"u32">[]): Val<"u32"> {
  let idx: Val<"u32"> = k.u32(a.offset);
  a.strides.forEach((s, d) => {
    if (s !== 0 && (a.shape[d] as number) > 1) idx = idx.add(coords[d]!.mul(s));
  });
  return idx;
}

/** Splits linear `i` over `shape` (row-major) into per-axis coordinates. */
function split(k: Builder, i: Val<"u32">, shape: readonly number[], name: string): Val<"u32">[] {
  const out: Val<"u32">[] = [];
  let rest = i;
  for (let d = shape.length - 1; d >= 0; d--) {
    const n = shape[d]!;
    out[d] = n === 1 ? k.u32(0) : k.let_(rest.rem(n), `${name}${d}`);
    if (d > 0) rest = k.let_(rest.div(n), `${name}r${d}`);
  }
  return out;
}

/** The thread's output element, linearized over a 2-D grid of 64-thread workgroups. */
function launch(k: Builder): Val<"u32"> {
  return k.let_(k.wid.y.mul(k.nwg.x).add(k.wid.x).mul(WG).add(k.lid.x), "o");
}

/** A reduction over any axes: each thread walks its reduced elements in row-major order, accumulating in f32. */
function stridedReduce(name: string, req: KernelRequest, caps: SynthCaps): RequestKernel | null {
  const p = req.params as unknown as ReduceParams;
  const x = req.inputs[0]!;
  const out = req.output;
  if (!FLOATS.includes(x.dtype as string) || p.kind === "argmax") return null;
  const rank = x.shape.length;
  const axes = p.axes.map((a) => (a < 0 ? a + rank : a));
  const kept = x.shape.map((_, i) => i).filter((i) => !axes.includes(i));
  const red = [...axes].sort((a, b) => a - b);
  const keptShape = kept.map((i) => x.shape[i]!);
  const redShape = red.map((i) => x.shape[i]!);
  const nOut = numel(keptShape),
    nRed = numel(redShape);
  const kern = kernel(name, { workgroupSize: [WG, 1, 1] }, (k) => {
    const src = k.buffer("x", x.dtype as ElemType, "read");
    const dst = k.buffer("out", out.dtype as ElemType, "write");
    const o = launch(k);
    k.if_(o.lt(nOut), () => {
      const kc = split(k, o, keptShape, "k");
      const coords: Val<"u32">[] = x.shape.map(() => k.u32(0));
      kept.forEach((d, j) => (coords[d] = kc[j]!));
      const init = p.kind === "sum" ? 0 : p.kind === "max" ? -Infinity : Infinity;
      const acc = k.var_(k.f32(init), "acc");
      k.for_(
        k.u32(0),
        k.u32(nRed),
        1,
        (r) => {
          const rc = split(k, r, redShape, "r");
          red.forEach((d, j) => (coords[d] = rc[j]!));
          const v = k.let_(src.at(index(k, x, coords)) as Val<"f32">, "v");
          // max/min propagate NaN like graph-ir's reference (a NaN element makes the result NaN).
          if (p.kind === "sum") acc.set(acc.add(v));
          else acc.set(k.select(v.ne(v).or(acc.ne(acc)), k.f32(NaN), p.kind === "max" ? k.max(acc, v) : k.min(acc, v)));
        },
        "ri",
      );
      // The output keeps the kept axes in order (and size-1 reduced axes when keepdim).
      const oc = p.keepdim ? x.shape.map((_, d) => (axes.includes(d) ? k.u32(0) : kc[kept.indexOf(d)]!)) : kc;
      dst.set(index(k, out, oc), acc);
    });
  });
  return {
    kernel: kern,
    grid: grid2d(Math.ceil(nOut / WG), caps),
    bindings: [
      { buffer: "x", source: { kind: "input", index: 0 } },
      { buffer: "out", source: { kind: "output" } },
    ],
  };
}

/** A batched contraction out[..., m, n] = Σ_k A[..., m, k] · B[..., k, n] (B as [..., n, k] when transposed). */
function stridedMatMul(name: string, req: KernelRequest, caps: SynthCaps): RequestKernel | null {
  const p = req.params as Record<string, unknown>;
  if ((p.epilogue ?? null) !== null || req.inputs.length !== 2) return null;
  const [A, B] = req.inputs as [Access, Access];
  const out = req.output;
  if (![A.dtype, B.dtype, out.dtype].every((d) => FLOATS.includes(d as string))) return null;
  const r = out.shape.length;
  if (r < 2 || A.shape.length < 2 || B.shape.length < 2) return null;
  const transposeB = p.transposeB === true;
  const K = A.shape[A.shape.length - 1]!;
  const nOut = numel(out.shape);
  const kern = kernel(name, { workgroupSize: [WG, 1, 1] }, (k) => {
    const a = k.buffer("A", A.dtype as ElemType, "read");
    const b = k.buffer("B", B.dtype as ElemType, "read");
    const c = k.buffer("C", out.dtype as ElemType, "write");
    const o = launch(k);
    k.if_(o.lt(nOut), () => {
      const oc = split(k, o, out.shape, "c");
      // Operands are right-aligned onto the output's batch dims; their size-1 dims broadcast.
      const onto = (x: Access, inner: [Val<"u32">, Val<"u32">]): Val<"u32">[] => {
        const lead = x.shape.length - 2;
        const coords = x.shape.slice(0, lead).map((_, d) => oc[r - 2 - lead + d]!);
        return [...coords, ...inner];
      };
      const acc = k.var_(k.f32(0), "acc");
      k.for_(
        k.u32(0),
        k.u32(K),
        1,
        (kk) => {
          const av = a.at(index(k, A, onto(A, [oc[r - 2]!, kk]))) as Val<"f32">;
          const bv = b.at(index(k, B, onto(B, transposeB ? [oc[r - 1]!, kk] : [kk, oc[r - 1]!]))) as Val<"f32">;
          acc.set(k.fma(av, bv, acc));
        },
        "kk",
      );
      c.set(index(k, out, oc), acc);
    });
  });
  return {
    kernel: kern,
    grid: grid2d(Math.ceil(nOut / WG), caps),
    bindings: [
      { buffer: "A", source: { kind: "input", index: 0 } },
      { buffer: "B", source: { kind: "input", index: 1 } },
      { buffer: "C", source: { kind: "output" } },
    ],
  };
}

/** A strided kernel for `req` when it is a plain reduction or contraction, else null. */
export function stridedFallback(req: KernelRequest, caps: SynthCaps, name: string): RequestKernel | null {
  if (req.op === "Reduce") return stridedReduce(name, req, caps);
  if (req.kind === "gemm" || req.kind === "gemv") return stridedMatMul(name, req, caps);
  return null;
}
