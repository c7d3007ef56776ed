// `poot bench --tp N`: the tensor-parallel group's collectives per decode token and the time they took.
import { TensorParallelExecutor, type Executor } from "@poot/executor";

/** Collectives of a tensor-parallel bench, per timed decode token (medians of the runs). */
export interface TensorParallelBench {
  /** Ranks. */
  readonly ranks: number;
  /** Collectives (all-reduces) per decode token. */
  readonly collectivesPerToken: number;
  /** Milliseconds per decode token spent in them (reading partials, summing in rank order, writing results). */
  readonly collectiveMsPerToken: number;
}

/** A reader of the group's collective counters, or null when `executor` is not a tensor-parallel group. */
export function collectiveCounter(executor: Executor): (() => { count: number; ms: number }) | null {
  return executor instanceof TensorParallelExecutor ? () => executor.collectiveStats() : null;
}

/** The bench line of a tensor-parallel run. */
export function describeTensorParallel(t: TensorParallelBench): string {
  return `  tensor parallel: ${t.ranks} ranks, ${t.collectivesPerToken} all-reduces/token, ${t.collectiveMsPerToken.toFixed(3)} ms/token in collectives\n`;
}
