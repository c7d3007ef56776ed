// Which plans a native GEMV serves (decisions 0952, 2300): a synthesized [M, K] x [N, K]^T contraction of f32
// activations over a weight format the library has a kernel for, with an epilogue the kernel applies (none, residual
// add, two heads), or any other elementwise epilogue that then runs as its own Wasm phase over the accumulators.

import type { TargetCode } from "@poot/codegen";
import type { RoutedLaunch, RoutedPlan, RoutedSource } from "@poot/executor/lowering";
import { isPacked, numel, stridesOf, type DType } from "@poot/graph-ir";
import {
  ACT_BLOCK,
  ACT_SUM,
  FAST_FORMATS,
  isDense,
  NATIVE_GEMV_UNIFORMS,
  NATIVE_QUANT_UNIFORMS,
  nativeQuantName,
  nativeGemvName,
  synthesizeRequest,
  type NativeEpilogue,
  type SynthCaps,
} from "@poot/kernelgen";
import type { Access, KernelRequest, Plan, Region, RegionNode } from "@poot/graph-plan";

/** Where a native kernel's buffer word points: a request access, the output, or the plan's accumulator scratch. */
export type NativeBinding = RoutedSource;

/** The activation quantizer a `fast` GEMV reads (decision 2320): x to 8-bit blocks in the plan's scratch. */
export interface NativeQuant {
  readonly symbol: string;
  /** [x, q, d, s]. */
  readonly buffers: readonly NativeBinding[];
  /** M, K. */
  readonly uniforms: readonly number[];
  /** One workgroup per row of x. */
  readonly grid: readonly [number, number, number];
}

/** A plan served natively: the GEMV's argument words, and the epilogue phase that follows it, if any. */
export interface NativeRoute {
  /** The activation quantizer that runs first (`fast` numerics), or null. */
  readonly quant: NativeQuant | null;
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

/** Rounds up to a multiple of 64 bytes. */
const align64 = (n: number): number => Math.ceil(n / 64) * 64;

/**
 * The native route of `plan` to one of `kernels` (the library's symbols), or null when the Wasm kernel keeps it.
 * With `fast` (the symbols of the library with integer dot products, `fast` numerics, decision 2320), a packed
 * format that has a `fast` GEMV there takes it, after its activation quantizer.
 */
export function routeNative(
  plan: Plan,
  threads: number,
  kernels: ReadonlySet<string>,
  fast: ReadonlySet<string> | null = null,
): NativeRoute | null {
  const r = routeExact(plan, threads, kernels);
  if (r === null || fast === null) return r;
  const src = plan.kernel;
  if (src.provenance === "none") return r;
  const B = src.request.inputs[1] as Access;
  const q = isPacked(B.dtype) ? FAST_FORMATS[B.dtype.packed.name] : undefined;
  const fastSymbol = r.symbol.replace(/_(none|add|heads2)$/, "_fast_$1");
  if (q === undefined || !fast.has(fastSymbol) || !fast.has(nativeQuantName(q))) return r;
  const [M, , K] = r.uniforms as [number, number, number];
  if (K % ACT_BLOCK[q] !== 0) return r;
  // Scratch after the accumulators: q (i8 [M, K]), d (f32 per block), s (i32 per ACT_SUM).
  const at = align64(r.scratchBytes);
  const qAt = { kind: "scratch", offset: at } as const;
  const dAt = { kind: "scratch", offset: at + align64(M * K) } as const;
  const sAt = { kind: "scratch", offset: dAt.offset + align64(((M * K) / ACT_BLOCK[q]) * 4) } as const;
  return {
    ...r,
    symbol: fastSymbol,
    buffers: [qAt, dAt, sAt, ...r.buffers.slice(1)],
    scratchBytes: sAt.offset + align64(((M * K) / ACT_SUM) * 4),
    quant: { symbol: nativeQuantName(q), buffers: [r.buffers[0]!, qAt, dAt, sAt], uniforms: [M, K], grid: [M, 1, 1] },
  };
}

/** {@link routeNative} in `exact` numerics. */
function routeExact(plan: Plan, threads: number, kernels: ReadonlySet<string>): NativeRoute | null {
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
    return { quant: null, symbol: none, buffers: [x, weights[0]!, y], uniforms, grid, scratchBytes: 0, epilogue: null };
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
      quant: null,
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
    quant: null,
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

/** A launch of native kernel `symbol` (code the device loads through koffi, marked by `abi.nativeBuffers`). */
function nativeLaunch(
  kernel: string,
  symbol: string,
  buffers: readonly NativeBinding[],
  names: readonly string[],
  values: readonly number[],
  grid: readonly [number, number, number],
): RoutedLaunch {
  const nbuf = buffers.length;
  const bufNames = buffers.map((_, i) => `b${i}`);
  const code: TargetCode = {
    target: "x86",
    kernel,
    entryPoint: symbol,
    ext: "native",
    workgroupSize: [1, 1, 1],
    bindings: [
      ...bufNames.map((buffer, slot) => ({ kind: "buffer", slot, buffer }) as const),
      { kind: "uniforms", slot: nbuf, order: names },
    ],
    abi: { argWords: nbuf + names.length + 5, sharedBytes: 0, frameBytes: 0, nativeBuffers: nbuf },
  };
  return {
    kernel: { code, uniforms: names.map((u) => ({ name: u, type: "u32" as const })) },
    grid,
    uniforms: Object.fromEntries(names.map((u, i) => [u, values[i]!])),
    bindings: buffers.map((source, i) => ({ buffer: bufNames[i]!, source })),
  };
}

/**
 * The CPU lowering's `route` hook: a plan a native GEMV of `kernels` serves becomes the GEMV's launch (preceded by
 * its activation quantizer's with `fast` kernels, decision 2320) and, when it has one, its epilogue's Wasm launch.
 */
export function nativeRoute(
  threads: number,
  synth: SynthCaps,
  kernels: ReadonlySet<string>,
  fast: ReadonlySet<string> | null = null,
): (plan: Plan, name: string) => RoutedPlan | null {
  return (plan, name) => {
    const r = routeNative(plan, threads, kernels, fast);
    if (r === null) return null;
    const gemv = nativeLaunch(`${name}_native`, r.symbol, r.buffers, NATIVE_GEMV_UNIFORMS, r.uniforms, r.grid);
    const q = r.quant;
    const first =
      q === null ? [] : [nativeLaunch(`${name}_quant`, q.symbol, q.buffers, NATIVE_QUANT_UNIFORMS, q.uniforms, q.grid)];
    const epi = r.epilogue;
    if (epi === null) return { launches: [...first, gemv], scratchBytes: r.scratchBytes };
    const rk = synthesizeRequest(epi.request, synth, `${name}_epilogue`);
    const bindings = rk.bindings.map(({ buffer, source: s }) => ({
      buffer,
      source: s.kind === "output" ? s : epi.binding(s.index),
    }));
    return {
      launches: [...first, gemv, { kernel: { dsl: rk.kernel }, grid: rk.grid, uniforms: {}, bindings }],
      scratchBytes: r.scratchBytes,
    };
  };
}
