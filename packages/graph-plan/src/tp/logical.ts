// The sharded graph before it is cut per rank: every value with its global type and how it is laid out across
// ranks (whole, split on an axis, or partial sums), and the equations including inserted slices and collectives.
import type { Operand, Params, Storage, ValueType } from "@poot/graph-ir";

/** How a value is laid out across the ranks. */
export type Sharding =
  /** Every rank holds the whole value. */
  | { readonly kind: "whole" }
  /** Rank r holds the r-th of `ranks` equal pieces along `axis`. */
  | { readonly kind: "split"; readonly axis: number }
  /** Every rank holds a full-shaped partial sum; the value is their sum. */
  | { readonly kind: "partial" };

/** The collective kinds a tensor-parallel program uses. */
export type CollectiveKind = "all-reduce" | "all-gather";

/** A value of the sharded graph, with its global type. */
export interface LValue extends ValueType {
  /** Its storage (device for equation outputs). */
  readonly storage: Storage;
  /** Layout across ranks. */
  readonly sharding: Sharding;
  /** Debug name. */
  readonly name?: string;
  /** The weight this value was computed from (for messages and explain), if any. */
  readonly origin?: string;
  /** For a split weight: the checkpoint key split (storage holds the same key). */
  readonly weightOf?: string;
}

/** An equation of the sharded graph. */
export type LEqn =
  /** An op of the source graph (params in global shapes; localized per rank). */
  | {
      readonly kind: "op";
      readonly op: string;
      readonly inputs: readonly Operand[];
      readonly params: Params;
      readonly out: number;
    }
  /** Each rank keeps its piece of a whole value along `axis`. */
  | { readonly kind: "local-slice"; readonly input: number; readonly axis: number; readonly out: number }
  /** A cross-rank collective: all-reduce sums partials in rank order, all-gather concatenates pieces on `axis`. */
  | {
      readonly kind: "collective";
      readonly collective: CollectiveKind;
      readonly input: number;
      readonly axis: number | null;
      readonly out: number;
    };

/** The sharded graph. */
export interface LogicalGraph {
  /** Ranks. */
  readonly ranks: number;
  /** Values (indices are ids). */
  readonly values: readonly LValue[];
  /** Equations in order. */
  readonly eqns: readonly LEqn[];
  /** State pairs (ids in `values`). */
  readonly states: readonly { readonly key: string; readonly input: number; readonly output: number }[];
  /** Outputs (ids in `values`, each whole). */
  readonly outputs: readonly { readonly name: string; readonly value: number }[];
}

/** The shape one rank holds of a value. */
export function localShape(v: ValueType & { readonly sharding: Sharding }, ranks: number): number[] {
  const s = [...v.shape];
  if (v.sharding.kind === "split") s[v.sharding.axis] = s[v.sharding.axis]! / ranks;
  return s;
}
