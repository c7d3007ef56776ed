// The composite op table: every op `compile` may introduce, registered through graph-ir's OpDef
// interface so an optimized graph validates and evaluates with graph-ir's own tools.

import { extendOps, type OpTable } from "@poot/graph-ir";
import { ArgMaxChunk, ArgMaxCombine } from "./argmax.js";
import { Attention } from "./attention.js";
import { ContractionEpilogue, PackedContraction } from "./contraction.js";
import { Fused, FusedRow } from "./fused.js";
import { PackedRowGather } from "./gather.js";
import { IndexedMatMul } from "./indexed.js";
import { Rope } from "./rope.js";

/** Every composite op, by name. */
export const COMPOSITE_OPS = {
  // ── regions ──
  Fused,
  FusedRow,
  // ── contractions ──
  ContractionEpilogue,
  PackedContraction,
  IndexedMatMul,
  // ── recognized chains ──
  Rope,
  Attention,
  // ── index and reduction stages ──
  PackedRowGather,
  ArgMaxChunk,
  ArgMaxCombine,
} as const;

/** Names of the composite ops. */
export type CompositeOp = keyof typeof COMPOSITE_OPS;

/** The primitives plus every composite: pass as `{ ops: PLAN_OPS }` to graph-ir's validate/evaluate/analysis. */
export const PLAN_OPS: OpTable = extendOps(COMPOSITE_OPS);
