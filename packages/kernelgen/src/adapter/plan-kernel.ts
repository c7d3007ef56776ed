// The kernel of one plan, shared by every backend and the interpreter: the imported library kernel where it launches,
// synthesized otherwise, after two exact request rewrites (moved here from backend-cuda, once copied from backend-wgpu).

import type { Access, KernelRequest, KernelSource } from "@poot/graph-plan";
import type { SynthCaps } from "../caps.js";
import { KernelgenError } from "../errors.js";
import { importedLaunch } from "../launch.js";
import { synthesizeRequest, type BindingSource } from "./request.js";
import { hasMmaUnit } from "../synth/gemm-mma.js";
import type { Kernel } from "@poot/kernel-dsl";

/** A kernel ready to lower and bind. */
export interface PlanKernel {
  readonly kernel: Kernel;
  readonly grid: readonly [number, number, number];
  readonly uniforms: Readonly<Record<string, number>>;
  readonly bindings: readonly { readonly buffer: string; readonly source: BindingSource }[];
  /** Subgroup size the kernel was generated for (launch with it), when it uses subgroups. */
  readonly subgroupSize?: number;
  /** Set when an imported plan was synthesized instead (the library lacks the kernel). */
  readonly fallback?: string;
  /** A scratch f32 buffer the backend allocates and binds here and in `then` (RequestKernel.transient). */
  readonly transient?: { readonly buffer: string; readonly elements: number };
  /** A second dispatch right after this one (flash-decode's combine; RequestKernel.then). */
  readonly then?: PlanKernel;
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
  for (let i = 0; i + 1 < red.length; i++)
    if (x.strides[red[i]!] !== x.strides[red[i + 1]!]! * x.shape[red[i + 1]!]!) return null;
  const kept = x.shape.map((_, i) => i).filter((i) => !axes.includes(i));
  const n = axes.reduce((a, i) => a * x.shape[i]!, 1);
  const last = red.length > 0 ? x.strides[red[red.length - 1]!]! : 1;
  const xs: Access = {
    ...x,
    shape: [...kept.map((i) => x.shape[i]!), n],
    strides: [...kept.map((i) => x.strides[i]!), last],
  };
  const o = req.output;
  // The output is written densely in kept-axis order, as graph-plan lays it out.
  if (o.strides.some((s, i) => o.shape[i] !== 1 && s !== dense(o.shape)[i])) return null;
  const oshape = [...kept.map((i) => x.shape[i]!), 1];
  return {
    ...req,
    inputs: [xs, ...req.inputs.slice(1)],
    output: { ...o, shape: oshape, strides: dense(oshape) },
    params: { ...req.params, axes: [oshape.length - 1], keepdim: true },
  };
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
 * True when the synthesizer serves imported kernel `name` faster on a device with `caps`: the library's GEMVs
 * read one scalar per lane (a workgroup per row), while with `vectorLoads` the synthesized GEMV streams 16-byte
 * words, a warp per row (0.12 vs ~0.6 ms for a Llama-3.2-1B lm_head on an H200, decision 2200); the library's
 * tiled GEMMs use no matrix unit, the synthesized one does where the caps list one for the weight's dtype.
 */
export function synthesizesFaster(name: string, caps: SynthCaps): boolean {
  if (name.startsWith("gemv_")) return caps.vectorLoads === true;
  if (name === "gemm_tiled_bf16") return hasMmaUnit(caps, "bf16");
  return false;
}

/**
 * The kernel of one plan: imported when the library has it (unless the synthesizer serves it faster on this
 * device, {@link synthesizesFaster}), else synthesized from the (rewritten) request.
 */
export function planKernel(
  src: Exclude<KernelSource, { provenance: "none" }>,
  caps: SynthCaps,
  name: string,
): PlanKernel {
  let fallback: string | undefined;
  if (src.provenance === "imported" && !synthesizesFaster(src.name, caps)) {
    try {
      const l = importedLaunch(src.name, src.metadata, caps);
      if (l.bindings !== undefined)
        return { kernel: l.kernel, grid: l.grid, uniforms: l.uniforms, bindings: l.bindings };
      fallback = `imported ${src.name} has no bindings`;
    } catch (e) {
      if (!(e instanceof KernelgenError)) throw e;
      fallback = e.message;
    }
  }
  const req = reduceAsRows(src.request) ?? squeezeWeightBatch(src.request) ?? src.request;
  const k = synthesizeRequest(req, caps, name);
  const then =
    k.then === undefined
      ? {}
      : { then: { kernel: k.then.kernel, grid: k.then.grid, uniforms: {}, bindings: k.then.bindings } };
  return {
    kernel: k.kernel,
    grid: k.grid,
    uniforms: {},
    bindings: k.bindings,
    ...(k.subgroupSize !== undefined ? { subgroupSize: k.subgroupSize } : {}),
    ...(fallback !== undefined ? { fallback } : {}),
    ...(k.transient !== undefined ? { transient: k.transient } : {}),
    ...then,
  };
}
