// Typed compile options (callers choose options, never a pass list) and their resolution to defaults.
// Every knob is a field here; nothing reads the environment.

import { PlanError } from "./errors.js";

/** Options of `compile`. */
export interface CompileOptions {
  /** What the graph is for; informs tiling (decode: GEMV-shaped contractions). Default "decode". */
  readonly mode?: "decode" | "prefill";
  /** Run fusion (regions, epilogues). Default true; false keeps one dispatch per primitive. */
  readonly fusion?: boolean;
  /** Recognize RoPE and attention chains. Default true. */
  readonly recognize?: boolean;
  /**
   * Run routed experts as gate-routed IndexedMatMuls (only the top-k experts of each token are computed). Default
   * true. Exact for finite expert outputs; a skipped expert whose output is Inf/NaN no longer poisons the sum.
   */
  readonly routedExperts?: boolean;
  /** Use imported library kernels where one fits (GEMV without epilogue, argmax stages, packed row gathers). Default true. */
  readonly preferImported?: boolean;
  /** An argmax over a last axis longer than this runs in two stages. Default 8192. */
  readonly argmaxSplitAbove?: number;
  /** Chunk length of two-stage argmax. Default 4096. */
  readonly argmaxChunk?: number;
  /** Largest fused region, in nodes. Default 128 (a batch of 8 writes its KV rows in one epilogue). */
  readonly maxRegionNodes?: number;
  /** Largest compile-time folded constant, in elements. Default 1 << 20. */
  readonly maxFoldElements?: number;
  /** Validate the graph after every pass (slower; for debugging the compiler). Default false. */
  readonly checkPasses?: boolean;
  /**
   * Which epilogues fusion gives a contraction. "any" (default): whatever reads only the accumulator, including
   * RoPE (which reads the partner element), row reductions and in-place State writes, and several B operands
   * sharing A at any row count. "own-element": only what a thread can apply to the accumulator it computed
   * itself, and extra heads only for GEMV-sized A (at most 8 rows); the rest becomes its own region. For
   * targets whose kernels compute a contraction with any other epilogue inline (one thread per output, every
   * dot product it reads recomputed), which is far slower than a separate small kernel (CUDA).
   */
  readonly contractionEpilogues?: "any" | "own-element";
  /**
   * Horizontal fusion of contractions sharing A. Both settings join contractions one epilogue reads together
   * (SwiGLU gate/up: several B operands of one ContractionEpilogue). "grouped" (default) also joins GEMVs that read
   * one A the same way but keep their own epilogues and outputs (q/k/v: RoPE, in-place KV-cache writes) into one
   * dispatch whose workgroups cover every member's output (decision 0402); "shared-epilogue" launches them apart.
   */
  readonly horizontalFusion?: "shared-epilogue" | "grouped";
}

/** Options with every default filled in. */
export type ResolvedOptions = Required<CompileOptions>;

/** Fills defaults and rejects out-of-range values. */
export function resolveOptions(o: CompileOptions = {}): ResolvedOptions {
  const r: ResolvedOptions = {
    mode: o.mode ?? "decode",
    fusion: o.fusion ?? true,
    recognize: o.recognize ?? true,
    routedExperts: o.routedExperts ?? true,
    preferImported: o.preferImported ?? true,
    argmaxSplitAbove: o.argmaxSplitAbove ?? 8192,
    argmaxChunk: o.argmaxChunk ?? 4096,
    maxRegionNodes: o.maxRegionNodes ?? 128,
    maxFoldElements: o.maxFoldElements ?? 1 << 20,
    checkPasses: o.checkPasses ?? false,
    contractionEpilogues: o.contractionEpilogues ?? "any",
    horizontalFusion: o.horizontalFusion ?? "grouped",
  };
  if (r.horizontalFusion !== "shared-epilogue" && r.horizontalFusion !== "grouped")
    throw new PlanError(
      "bad-option",
      `horizontalFusion must be "shared-epilogue" or "grouped", got ${JSON.stringify(r.horizontalFusion)}`,
      { key: "horizontalFusion" },
    );
  if (r.contractionEpilogues !== "any" && r.contractionEpilogues !== "own-element")
    throw new PlanError(
      "bad-option",
      `contractionEpilogues must be "any" or "own-element", got ${JSON.stringify(r.contractionEpilogues)}`,
      { key: "contractionEpilogues" },
    );
  if (r.mode !== "decode" && r.mode !== "prefill")
    throw new PlanError("bad-option", `mode must be decode or prefill, got ${JSON.stringify(r.mode)}`, { key: "mode" });
  for (const k of ["argmaxSplitAbove", "argmaxChunk", "maxRegionNodes", "maxFoldElements"] as const) {
    if (!Number.isSafeInteger(r[k]) || r[k] < 1)
      throw new PlanError("bad-option", `${k} must be a positive integer, got ${String(r[k])}`, { key: k });
  }
  return r;
}
