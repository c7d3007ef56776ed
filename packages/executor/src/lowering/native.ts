// Prebuilt native kernels a device loads by symbol (the CPU's GEMV library, decisions 0952, 2300, 2345): a plan whose
// contraction one of them computes becomes its launches, the library GEMV (after its activation quantizer in `fast`
// numerics, decision 2320) and, with two heads, their epilogue as a kernel-dsl launch over the two accumulators (none
// when it is the SwiGLU the library's `swiglu` GEMVs apply, decision 2360). The
// planner fused nothing else into a contraction (graph-plan caps `contractionEpilogues: "residual"`).

import type { TargetCode } from "@poot/codegen";
import { isPacked, numel, stridesOf, type DType } from "@poot/graph-ir";
import { swigluRequest, type Access, type KernelRequest, type Plan, type Region } from "@poot/graph-plan";
import {
  ACT_BLOCK,
  ACT_SUM,
  FAST_FORMATS,
  isDense,
  NATIVE_GEMV_UNIFORMS,
  NATIVE_QUANT_UNIFORMS,
  nativeGemvName,
  nativeQuantName,
  nativeSlabScratch,
  synthesizeRequest,
  type SynthCaps,
} from "@poot/kernelgen";
import type { RoutedLaunch, RoutedPlan, RoutedSource } from "./types.js";

/** A target's native kernels: the library's symbols, and whether `fast` numerics take its integer-dot GEMVs. */
export interface NativeKernels {
  /** Every symbol the library defines (sorted, so the cache key does not depend on the library's order). */
  readonly symbols: readonly string[];
  /** Packed formats with a `fast` GEMV take it, after its activation quantizer (decision 2320). */
  readonly fast: boolean;
  /** The library's identity (its source hash): part of the lowering cache's key, never read by the router. */
  readonly library: string;
}

const CONTRACTIONS = new Set(["gemv", "gemm", "dequant-gemv", "dequant-gemm"]);

/** The weight format's name in kernel names: the packed format's or the dtype's. */
const formatOf = (d: DType): string => (isPacked(d) ? d.packed.name : (d as string));

/** Rounds up to a multiple of 64 bytes. */
const align64 = (n: number): number => Math.ceil(n / 64) * 64;

/** The region is `in0 + in1` (either order) in f32: the residual add the library's `add` GEMVs apply. */
function isResidualAdd(r: Region): boolean {
  const n = r.nodes[0]!;
  const ins = n.args.map((a) => ("in" in a ? a.in : -1)).sort();
  return r.nodes.length === 1 && n.op === "Add" && n.dtype === "f32" && ins.join() === "0,1";
}

/** Rows per workgroup: about `perThread` workgroups per thread per phase (so chunks balance), at most 65535 workgroups. */
function rowsPerGroup(N: number, threads: number, perThread = 16): number {
  return Math.max(1, Math.ceil(N / (threads * perThread)), Math.ceil(N / 65535));
}

/**
 * At most this many rows of x, a `fast` GEMV quantizes them itself ("fastx", decisions 2410, 2440): each thread's first
 * workgroup of the phase quantizes all of x into the thread's own slot, so at most decode's single row.
 */
const FASTX_MAX_ROWS = 1;
/** The most threads a "fastx" GEMV's group id can name (kernelgen's FASTX_GROUP: 7 bits). */
const FASTX_MAX_THREADS = 128;

/** A launch of library kernel `symbol`: its buffers in order, then the 32-bit uniforms `names` (decision 2300's ABI). */
function libraryLaunch(
  kernel: string,
  symbol: string,
  buffers: readonly RoutedSource[],
  names: readonly string[],
  values: readonly number[],
  grid: readonly [number, number, number],
  threadSlots = false,
): RoutedLaunch {
  const nbuf = buffers.length;
  const code: TargetCode = {
    target: "x86",
    kernel,
    entryPoint: symbol,
    ext: "native",
    workgroupSize: [1, 1, 1],
    bindings: [
      ...buffers.map((_, slot) => ({ kind: "buffer", slot, buffer: `b${slot}` }) as const),
      { kind: "uniforms", slot: nbuf, order: names },
    ],
    abi: {
      argWords: nbuf + names.length + 5,
      sharedBytes: 0,
      frameBytes: 0,
      nativeBuffers: nbuf,
      ...(threadSlots ? { threadSlots: 1 } : {}),
    },
  };
  return {
    kernel: { code, uniforms: names.map((u) => ({ name: u, type: "u32" as const })) },
    grid,
    uniforms: Object.fromEntries(names.map((u, i) => [u, values[i]!])),
    bindings: buffers.map((source, i) => ({ buffer: `b${i}`, source })),
  };
}

/**
 * The router of a target with native kernels: a plan whose `[M, K] × [N, K]ᵀ` contraction (f32 accumulation, dense
 * f32 activations, one or two dense weights of a format the library has) takes no epilogue, a residual add, or two
 * heads becomes its library launches; anything else is null (kernelgen's kernel serves it). `threads` sizes the rows
 * per workgroup; `synth` the two heads' epilogue.
 */
export function nativeRouter(
  native: NativeKernels,
  threads: number,
  synth: SynthCaps,
): (plan: Plan, name: string) => RoutedPlan | null {
  const has = new Set(native.symbols);
  return (plan, name) => {
    const src = plan.kernel;
    if (src.provenance === "none") return null;
    const req = src.request;
    const p = req.params as Record<string, unknown>;
    const heads = (p.heads ?? 1) as number;
    const epi = (p.epilogue ?? null) as Region | null;
    if (!CONTRACTIONS.has(req.kind) || req.group !== undefined || p.transposeB !== true) return null;
    if ((p.accDtype ?? "f32") !== "f32" || heads > 2) return null;
    if (heads === 2 && (epi === null || epi.nodes.some((n) => n.op === "Reduce"))) return null;
    const [A, ...rest] = req.inputs as Access[];
    const Bs = rest.slice(0, heads),
      extras = rest.slice(heads);
    const B = Bs[0]!;
    const K = A!.shape.at(-1)!,
      N = B.shape[0]!,
      M = numel(A!.shape.slice(0, -1));
    const fmt = formatOf(B.dtype);
    const rows = (a: Access): boolean => a.dtype === "f32" && isDense(a) && numel(a.shape) === M * N;
    if (
      A!.dtype !== "f32" ||
      !isDense(A!) ||
      Bs.some((b) => b.shape.length !== 2 || b.shape[0] !== N || b.shape[1] !== K || !isDense(b)) ||
      Bs.some((b) => formatOf(b.dtype) !== fmt) ||
      (isPacked(B.dtype) && K % B.dtype.packed.blockSize !== 0) ||
      (heads === 1 && !rows(req.output)) ||
      (heads === 1 && epi !== null && (extras.length !== 1 || !rows(extras[0]!) || !isResidualAdd(epi)))
    )
      return null;
    // The two-heads SwiGLU the planner counted as one dispatch (graph-plan's swigluRequest): the swiglu GEMV (2360).
    const gate = swigluRequest(req);
    const swiglu = gate !== null && has.has(nativeGemvName(fmt, "swiglu"));
    const epilogue = swiglu ? "swiglu" : heads === 2 ? "heads2" : epi === null ? "none" : "add";
    const twoAccs = epilogue === "heads2";
    // Every packed format with an integer loop takes it under `fast`, decode included: Q8_0's decode walk streams
    // its weights faster than the `exact` GEMV since decision 2470 (2441 had kept `exact` there).
    const q = native.fast && isPacked(B.dtype) ? FAST_FORMATS[B.dtype.packed.name] : undefined;
    const fast = q !== undefined && K % ACT_BLOCK[q] === 0 && has.has(nativeQuantName(q));
    // Decode's single row: the GEMV quantizes x itself when the library has that kernel (decision 2410).
    const fastx =
      fast && M <= FASTX_MAX_ROWS && threads <= FASTX_MAX_THREADS && has.has(nativeGemvName(fmt, epilogue, "fastx"));
    const symbol = fastx
      ? nativeGemvName(fmt, epilogue, "fastx")
      : nativeGemvName(fmt, epilogue, fast && has.has(nativeGemvName(fmt, epilogue, true)));
    if (!has.has(symbol)) return null;
    const quantized = !fastx && symbol !== nativeGemvName(fmt, epilogue);
    const R = rowsPerGroup(N, threads);
    const groups = Math.ceil(N / R);
    // Scratch: the two heads' accumulators ([2][M][N] f32), then `fast`'s q (i8 [M, K]), d (f32 per block), s (i32 per
    // ACT_SUM); "fastx" has one such slot per thread (rows [t M, t M + M)) and takes q twice (qw: its u32 view).
    const xRows = fastx ? threads * M : M;
    const accBytes = twoAccs ? 2 * M * N * 4 : 0;
    const qAt = align64(accBytes);
    const dAt = qAt + align64(xRows * K);
    const sAt = dAt + (q === undefined ? 0 : align64(((xRows * K) / ACT_BLOCK[q]) * 4));
    const at = (offset: number): RoutedSource => ({ kind: "scratch", offset });
    // `fast` GEMMs: each workgroup's slab of interleaved weight rows (Q8_0: decision 2390, Q4_K and Q6_K: 2430), after
    // s; bound twice (written as words, read as bytes), zero bytes where M takes no slab.
    const qEnd = q === undefined ? 0 : sAt + align64(((xRows * K) / ACT_SUM) * 4);
    const slab = quantized ? nativeSlabScratch(fmt, M, K, groups) : null;
    const input: RoutedSource = { kind: "input", index: 0 };
    const x: RoutedSource[] = quantized
      ? [at(qAt), at(dAt), at(sAt)]
      : fastx
        ? [input, at(qAt), at(dAt), at(sAt), at(qAt)]
        : [input];
    const buffers: RoutedSource[] = [
      ...x,
      // The swiglu kernels read the gate's weights first.
      ...Bs.map((_, h): RoutedSource => ({ kind: "input", index: 1 + (swiglu && gate === 1 ? 1 - h : h) })),
      ...(epilogue === "add" ? [{ kind: "input", index: 2 } as const] : []),
      twoAccs ? at(0) : { kind: "output" },
      ...(slab === null ? [] : [at(qEnd), at(qEnd)]),
    ];
    const gemv = libraryLaunch(
      `${name}_native`,
      symbol,
      buffers,
      NATIVE_GEMV_UNIFORMS,
      [M, N, K, R],
      [groups, 1, 1],
      fastx,
    );
    const launches = [gemv];
    if (quantized)
      launches.unshift(
        libraryLaunch(
          `${name}_quant`,
          nativeQuantName(q!),
          [{ kind: "input", index: 0 }, ...x],
          NATIVE_QUANT_UNIFORMS,
          [M, K],
          [M, 1, 1],
        ),
      );
    if (twoAccs) {
      // The epilogue as an elementwise request over [accumulators (scratch, roots < 0)..., extras...].
      const shape = [...A!.shape.slice(0, -1), N];
      const acc = (h: number): Access => ({
        value: -1 - h,
        root: -1 - h,
        dtype: "f32",
        shape,
        strides: stridesOf(shape),
        offset: 0,
      });
      const request: KernelRequest = {
        kind: "elementwise",
        op: "Fused",
        inputs: [acc(0), acc(1), ...extras],
        output: req.output,
        params: {},
        region: epi,
        emulated16: req.emulated16,
      };
      const rk = synthesizeRequest(request, synth, `${name}_epilogue`);
      const bindings = rk.bindings.map(({ buffer, source: s }) => ({
        buffer,
        source:
          s.kind === "output"
            ? s
            : s.index < 2
              ? at(s.index * M * N * 4)
              : { kind: "input" as const, index: 1 + s.index },
      }));
      launches.push({ kernel: { dsl: rk.kernel }, grid: rk.grid, uniforms: {}, bindings });
    }
    return { launches, scratchBytes: quantized || fastx ? qEnd + (slab ?? 0) : accBytes };
  };
}
