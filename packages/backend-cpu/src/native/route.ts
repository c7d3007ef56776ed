// Which plans a native GEMV serves (decisions 0952, 2300): a synthesized [M, K] x [N, K]^T contraction of f32
// activations over a weight format the library has a kernel for, with an epilogue the kernel applies (none, residual
// add, two heads), or any other elementwise epilogue that then runs as its own Wasm phase over the accumulators.

import type { TargetCode } from "@poot/codegen";
import type { RoutedLaunch, RoutedPlan, RoutedSource } from "@poot/executor/lowering";
import { isPacked, numel, stridesOf, type DType } from "@poot/graph-ir";
import {
  isDense,
  NATIVE_GEMV_UNIFORMS,
  nativeGemvName,
  synthesizeRequest,
  type NativeEpilogue,
  type SynthCaps,
} from "@poot/kernelgen";
import type { Access, KernelRequest, Plan, Region, RegionNode } from "@poot/graph-plan";

/** Where a native kernel's buffer word points: a request access, the output, or the plan's accumulator scratch. */
export type NativeBinding = RoutedSource;

/** A plan served natively: the GEMV's argument words, and the epilogue phase that follows it, if any. */
export interface NativeRoute {
  /** The library kernel's symbol. */
  readonly symbol: string;
  /** Buffer words in the kernel's order ([x, W, y], [x, W, r, y] or [x, W0, W1, y]). */
  readonly buffers: readonly NativeBinding[];
  /** The words after them: M, N, K, rows per workgroup. */
  readonly uniforms: readonly number[];
  readonly grid: readonly [number, number, number];
  /** Bytes of accumulator scratch the GEMV writes and the epilogue reads (0 without an epilogue phase). */
  readonly scratchBytes: number;
  /**
   * The epilogue as an elementwise request over [accumulators..., extras...] (accumulators are scratch, roots < 0),
   * with how its inputs map back to the plan's; null when the GEMV writes the output itself.
   */
  readonly epilogue: { readonly request: KernelRequest; readonly binding: (input: number) => NativeBinding } | null;
}

const CONTRACTIONS = new Set(["gemv", "gemm", "dequant-gemv", "dequant-gemm"]);

/** The weight format's name in kernel names: the packed format's or the dtype's. */
function formatOf(d: DType): string {
  return isPacked(d) ? d.packed.name : (d as string);
}

/** The region is `in0 + in1` (either order) in f32: the residual add the C kernel fuses exactly. */
function isResidualAdd(r: Region | null): boolean {
  if (r === null || r.nodes.length !== 1) return false;
  const n = r.nodes[0] as RegionNode;
  const ins = n.args.map((a) => ("in" in a ? a.in : -1)).sort();
  return n.op === "Add" && n.dtype === "f32" && ins.length === 2 && ins[0] === 0 && ins[1] === 1;
}

/** Rows per workgroup: about 16 workgroups per thread per phase (so chunks balance), at most 65535 workgroups. */
export function rowsPerGroup(N: number, threads: number): number {
  return Math.max(1, Math.ceil(N / (threads * 16)), Math.ceil(N / 65535));
}

/** The native route of `plan` to one of `kernels` (the library's symbols), or null when the Wasm kernel keeps it. */
export function routeNative(plan: Plan, threads: number, kernels: ReadonlySet<string>): NativeRoute | null {
  const src = plan.kernel;
  // An imported library GEMV computes the same contraction: its request describes it as well.
  if (src.provenance === "none") return null;
  const req = src.request;
  const p = req.params as Record<string, unknown>;
  const heads = (p.heads ?? 1) as number;
  if (
    !CONTRACTIONS.has(req.kind) ||
    req.group !== undefined ||
    p.transposeB !== true ||
    (p.accDtype ?? "f32") !== "f32" ||
    (heads !== 1 && heads !== 2)
  )
    return null;
  const A = req.inputs[0] as Access;
  const Bs = req.inputs.slice(1, 1 + heads);
  const extras = req.inputs.slice(1 + heads);
  const K = A.shape[A.shape.length - 1] as number;
  const B = Bs[0] as Access;
  const fmt = formatOf(B.dtype);
  // The library's kernel of this format with `e`, if it has one.
  const kernel = (e: NativeEpilogue): string | null => {
    const s = nativeGemvName(fmt, e);
    return kernels.has(s) ? s : null;
  };
  if (kernel("none") === null || A.dtype !== "f32" || !isDense(A)) return null;
  if (
    Bs.some(
      (b) =>
        b.shape.length !== 2 ||
        b.shape[1] !== K ||
        !isDense(b) ||
        formatOf(b.dtype) !== fmt ||
        b.shape[0] !== B.shape[0],
    )
  )
    return null;
  if (isPacked(B.dtype) && K % B.dtype.packed.blockSize !== 0) return null;
  const N = B.shape[0] as number,
    M = numel(A.shape.slice(0, -1));
  const R = rowsPerGroup(N, threads);
  const grid = [Math.ceil(N / R), 1, 1] as const;
  const out = req.output;
  const epi = (p.epilogue ?? null) as Region | null;
  const x = { kind: "input", index: 0 } as const,
    y = { kind: "output" } as const;
  const weights = Bs.map((_, h) => ({ kind: "input", index: 1 + h }) as const);
  const plain = out.dtype === "f32" && isDense(out) && numel(out.shape) === M * N;
  const uniforms = [M, N, K, R];
  const none = kernel("none")!;
  if (heads === 1 && epi === null && plain)
    return { symbol: none, buffers: [x, weights[0]!, y], uniforms, grid, scratchBytes: 0, epilogue: null };
  const r = extras[0];
  const add = kernel("add");
  if (
    add !== null &&
    heads === 1 &&
    plain &&
    isResidualAdd(epi) &&
    r !== undefined &&
    extras.length === 1 &&
    r.dtype === "f32" &&
    isDense(r) &&
    numel(r.shape) === M * N
  ) {
    return {
      symbol: add,
      buffers: [x, weights[0]!, { kind: "input", index: 1 + heads }, y],
      uniforms,
      grid,
      scratchBytes: 0,
      epilogue: null,
    };
  }
  // Any other elementwise epilogue: accumulators to scratch, then the region as an elementwise Wasm phase.
  const heads2 = kernel("heads2");
  if (epi === null || epi.nodes.some((n) => n.op === "Reduce") || (heads === 2 && heads2 === null)) return null;
  const accShape = [...A.shape.slice(0, -1), N];
  const acc = (h: number): Access => ({
    value: -1 - h,
    root: -1 - h,
    dtype: "f32",
    shape: accShape,
    strides: stridesOf(accShape),
    offset: 0,
  });
  const request: KernelRequest = {
    kind: "elementwise",
    op: "Fused",
    inputs: [...Bs.map((_, h) => acc(h)), ...extras],
    output: out,
    params: {},
    region: epi,
    emulated16: req.emulated16,
  };
  const scratch = Array.from({ length: heads }, (_, h) => ({ kind: "scratch", offset: h * M * N * 4 }) as const);
  return {
    symbol: heads === 2 ? heads2! : none,
    buffers: heads === 2 ? [x, weights[0]!, weights[1]!, scratch[0]!] : [x, weights[0]!, scratch[0]!],
    uniforms,
    grid,
    scratchBytes: heads * M * N * 4,
    epilogue: {
      request,
      binding: (i) => (i < heads ? scratch[i]! : { kind: "input", index: 1 + heads + (i - heads) }),
    },
  };
}

/** The argument words after the buffers of every native GEMV, as uniforms. */
const UNIFORMS = NATIVE_GEMV_UNIFORMS;

/**
 * The CPU lowering's `route` hook: a plan a native GEMV of `kernels` serves becomes the GEMV's launch (code the
 * device loads through koffi, marked by `abi.nativeBuffers`) and, when it has one, its epilogue's Wasm launch.
 */
export function nativeRoute(
  threads: number,
  synth: SynthCaps,
  kernels: ReadonlySet<string>,
): (plan: Plan, name: string) => RoutedPlan | null {
  return (plan, name) => {
    const r = routeNative(plan, threads, kernels);
    if (r === null) return null;
    const nbuf = r.buffers.length;
    const names = r.buffers.map((_, i) => `b${i}`);
    const code: TargetCode = {
      target: "x86",
      kernel: `${name}_native`,
      entryPoint: r.symbol,
      ext: "native",
      workgroupSize: [1, 1, 1],
      bindings: [
        ...names.map((buffer, slot) => ({ kind: "buffer", slot, buffer }) as const),
        { kind: "uniforms", slot: nbuf, order: UNIFORMS },
      ],
      abi: { argWords: nbuf + UNIFORMS.length + 5, sharedBytes: 0, frameBytes: 0, nativeBuffers: nbuf },
    };
    const gemv: RoutedLaunch = {
      kernel: { code, uniforms: UNIFORMS.map((u) => ({ name: u, type: "u32" as const })) },
      grid: r.grid,
      uniforms: Object.fromEntries(UNIFORMS.map((u, i) => [u, r.uniforms[i]!])),
      bindings: r.buffers.map((source, i) => ({ buffer: names[i]!, source })),
    };
    const epi = r.epilogue;
    if (epi === null) return { launches: [gemv], scratchBytes: r.scratchBytes };
    const rk = synthesizeRequest(epi.request, synth, `${name}_epilogue`);
    const bindings = rk.bindings.map(({ buffer, source: s }) => ({
      buffer,
      source: s.kind === "output" ? s : epi.binding(s.index),
    }));
    return {
      launches: [gemv, { kernel: { dsl: rk.kernel }, grid: rk.grid, uniforms: {}, bindings }],
      scratchBytes: r.scratchBytes,
    };
  };
}
