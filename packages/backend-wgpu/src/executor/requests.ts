// Plan kernels for the executor: imported library kernels where kernelgen has them, synthesized otherwise,
// after two exact request rewrites (reductions over leading axes, broadcast weight batch dims) kernelgen lacks.

import { isLiteral, isPacked, type Eqn } from "@poot/graph-ir";
import type { Access, KernelRequest, KernelSource, RegionArg } from "@poot/graph-plan";
import { KernelgenError, importedLaunch, synthesizeRequest, type BindingSource, type SynthCaps } from "@poot/kernelgen";
import type { Kernel } from "@poot/kernel-dsl";

/** A kernel ready to lower and bind. */
export interface PlanKernel {
  readonly kernel: Kernel;
  readonly grid: readonly [number, number, number];
  readonly uniforms: Readonly<Record<string, number>>;
  readonly bindings: readonly { readonly buffer: string; readonly source: BindingSource }[];
  /** Set when an imported plan was synthesized instead (the library lacks the kernel). */
  readonly fallback?: string;
  /** Inputs (by index, with their original strided access) to copy densely before the kernel runs. */
  readonly densify: readonly { readonly index: number; readonly access: Access }[];
}

/**
 * A contraction whose A or B is a strided view (e.g. one activation broadcast over experts) reads dense copies
 * instead: kernelgen's contraction kernels take dense operands only. The copies are made by the executor.
 */
export function denseOperands(req: KernelRequest): { req: KernelRequest; densify: { index: number; access: Access }[] } | null {
  if (req.kind !== "gemv" && req.kind !== "gemm") return null;
  const densify: { index: number; access: Access }[] = [];
  const inputs = req.inputs.map((a, index) => {
    if (index > 1 || isPacked(a.dtype) || (a.offset === 0 && a.strides.every((st, i) => a.shape[i] === 1 || st === dense(a.shape)[i]))) return a;
    densify.push({ index, access: a });
    return { ...a, strides: dense(a.shape), offset: 0 };
  });
  return densify.length === 0 ? null : { req: { ...req, inputs }, densify };
}

const dense = (shape: readonly number[]): number[] => {
  const s = new Array<number>(shape.length);
  let acc = 1;
  for (let i = shape.length - 1; i >= 0; i--) {
    s[i] = acc;
    acc *= shape[i]!;
  }
  return s;
};

/**
 * A Reduce over any axes as a last-axis row reduction: kept axes first (their own strides), the reduced axes
 * collapsed into one last axis. Exact (same elements, same combine); null when the reduced axes do not collapse.
 */
export function reduceAsRows(req: KernelRequest): KernelRequest | null {
  const p = req.params as { axes?: number[]; keepdim?: boolean };
  const x = req.inputs[0];
  if (req.op !== "Reduce" || x === undefined || p.axes === undefined) return null;
  const r = x.shape.length;
  const axes = [...new Set(p.axes.map((a) => (a < 0 ? a + r : a)))].sort((a, b) => a - b);
  if (axes.length === 1 && axes[0] === r - 1) return null;
  // Size-1 axes do not affect addressing; the others must form one stride run.
  const red = axes.filter((a) => x.shape[a] !== 1);
  for (let i = 0; i + 1 < red.length; i++) if (x.strides[red[i]!] !== x.strides[red[i + 1]!]! * x.shape[red[i + 1]!]!) return null;
  const kept = x.shape.map((_, i) => i).filter((i) => !axes.includes(i));
  const n = axes.reduce((a, i) => a * x.shape[i]!, 1);
  const last = red.length > 0 ? x.strides[red[red.length - 1]!]! : 1;
  const xs: Access = { ...x, shape: [...kept.map((i) => x.shape[i]!), n], strides: [...kept.map((i) => x.strides[i]!), last] };
  const o = req.output;
  // The output is written densely in kept-axis order, as graph-plan lays it out.
  if (o.strides.some((s, i) => o.shape[i] !== 1 && s !== dense(o.shape)[i])) return null;
  const oshape = [...kept.map((i) => x.shape[i]!), 1];
  return { ...req, inputs: [xs, ...req.inputs.slice(1)], output: { ...o, shape: oshape, strides: dense(oshape) }, params: { ...req.params, axes: [oshape.length - 1], keepdim: true } };
}

/** A contraction whose weight has only size-1 batch dims, with those dims dropped (a shared [K, N] weight). */
export function squeezeWeightBatch(req: KernelRequest): KernelRequest | null {
  if (req.kind !== "gemm" && req.kind !== "gemv") return null;
  const B = req.inputs[1];
  if (B === undefined || B.shape.length <= 2 || B.shape.slice(0, -2).some((d) => d !== 1)) return null;
  const Bs: Access = { ...B, shape: B.shape.slice(-2), strides: B.strides.slice(-2) };
  return { ...req, inputs: [req.inputs[0]!, Bs, ...req.inputs.slice(2)] };
}

/**
 * An unfused primitive with literal operands, as a one-node region carrying the literals: graph-plan leaves
 * such literals in the equation (not in the request), and kernelgen's one-node region reads inputs only.
 */
export function inlineLiterals(req: KernelRequest, eqn: Eqn | undefined): KernelRequest | null {
  if (req.region !== null || eqn === undefined || !eqn.inputs.some(isLiteral) || (req.kind !== "elementwise" && req.kind !== "movement")) return null;
  let k = 0;
  const args: RegionArg[] = eqn.inputs.map((o) => (isLiteral(o) ? { lit: o.lit, dtype: o.dtype } : { in: k++ }));
  // The request's inputs are the equation's value operands, in order; anything else is not this case.
  if (k !== req.inputs.length) return null;
  return { ...req, region: { nodes: [{ op: eqn.op, args, params: eqn.params, dtype: req.output.dtype as never, shape: req.output.shape }], result: 0 } };
}

/** The kernel of one plan: imported when the library has it, else synthesized from the (rewritten) request. */
export function planKernel(src: Exclude<KernelSource, { provenance: "none" }>, caps: SynthCaps, name: string, eqn?: Eqn): PlanKernel {
  let fallback: string | undefined;
  if (src.provenance === "imported") {
    try {
      const l = importedLaunch(src.name, src.metadata);
      if (l.bindings !== undefined) return { kernel: l.kernel, grid: l.grid, uniforms: l.uniforms, bindings: l.bindings, densify: [] };
      fallback = `imported ${src.name} has no bindings`;
    } catch (e) {
      if (!(e instanceof KernelgenError)) throw e;
      fallback = e.message;
    }
  }
  const base = reduceAsRows(src.request) ?? squeezeWeightBatch(src.request) ?? inlineLiterals(src.request, eqn) ?? src.request;
  const d = denseOperands(base);
  const k = synthesizeRequest(d?.req ?? base, caps, name);
  return { kernel: k.kernel, grid: k.grid, uniforms: {}, bindings: k.bindings, densify: d?.densify ?? [], ...(fallback !== undefined ? { fallback } : {}) };
}
