// `poot compile --tp N`: the model's graph sharded for N ranks (graph-plan's shardGraph), each rank's segments
// compiled for the target; reports the weight shards, the collectives per step (count and bytes) and dispatches.
import { readFileSync, statSync } from "node:fs";
import type { Graph } from "@poot/graph-ir";
import { compile, defaultTarget, PlanError, shardGraph, type BackendKind, type CompileOptions } from "@poot/graph-plan";
import { checkTensorParallel, LoadedModel, parseHFConfig, type ModelConfig } from "@poot/models";
import { CliError } from "../errors.js";
import { withModelErrors } from "./model-args.js";

/** What `--tp` adds to the compile report. */
export interface TensorParallelReport {
  readonly ranks: number;
  readonly segmentsPerRank: number;
  readonly shards: readonly { key: string; axis: number; shape: readonly number[]; bytes: number }[];
  readonly shardBytesPerRank: number;
  readonly collectivesPerStep: Record<string, { count: number; bytes: number }>;
  readonly collectives: readonly { index: number; kind: string; name: string; bytes: number; segment: number }[];
  /** Kernel launches per step of each rank (its segments summed). */
  readonly dispatchesPerRank: number;
  /** The text `--explain` prints. */
  readonly text: string;
}

function configOf(model: string): ModelConfig {
  return withModelErrors("compile", model, () => {
    if (statSync(model).isFile() && model.endsWith(".json"))
      return parseHFConfig(JSON.parse(readFileSync(model, "utf8")), model);
    const m = LoadedModel.open(model);
    try {
      return m.config;
    } finally {
      m.close();
    }
  });
}

/** Parses `--tp` for compile (any target: it plans, it does not run). */
export function compileRanks(tp: string | undefined): number | null {
  if (tp === undefined) return null;
  const n = Number(tp);
  if (tp.trim() === "" || !Number.isSafeInteger(n) || n < 1)
    throw new CliError("bad-input", `--tp must be a positive integer, got "${tp}"`, { command: "compile" });
  return n;
}

/** Shards `g` for `ranks` ranks and compiles every rank's segments for `target`; refusals are one-line CliErrors. */
export function tensorParallelReport(
  model: string,
  g: Graph,
  ranks: number,
  target: BackendKind,
  options: CompileOptions,
): TensorParallelReport {
  withModelErrors("compile", model, () => checkTensorParallel(configOf(model), ranks));
  try {
    const tp = shardGraph(g, { ranks });
    const t = defaultTarget(target);
    const dispatches = tp.graphs[0]!.reduce((a, seg) => a + compile(seg, t, options).dispatchCount(), 0);
    const per = tp.collectivesPerStep();
    return {
      ranks,
      segmentsPerRank: tp.segments.length,
      shards: tp.shards,
      shardBytesPerRank: tp.shardBytesPerRank(),
      collectivesPerStep: per,
      collectives: tp.collectives.map((c) => ({
        index: c.index,
        kind: c.kind,
        name: c.name,
        bytes: c.bytes,
        segment: c.segment,
      })),
      dispatchesPerRank: dispatches,
      text: `${tp.explain()}\n  dispatches per step on each rank (${target}): ${dispatches}\n`,
    };
  } catch (err) {
    if (err instanceof PlanError)
      throw new CliError("command-failed", err.message, { command: "compile", file: model });
    throw err;
  }
}

/** `--compiled` runs one compiled program per step; `--tp` shards the traced graph instead (each rank compiles its own). */
export function refuseCompiledTp(o: { compiled?: boolean; tp?: string }, command: string): void {
  if (o.compiled === true && o.tp !== undefined && o.tp.trim() !== "1")
    throw new CliError(
      "bad-input",
      `--tp ${o.tp} shards the traced graph (each rank compiles its own segments): leave out --compiled`,
      { command },
    );
}
