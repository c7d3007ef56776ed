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

/** Counts a tensor-parallel group's collectives around the timed decode steps of each run. */
export class CollectiveMeter {
  private readonly count: number[] = [];
  private readonly ms: number[] = [];
  private start: { count: number; ms: number } | null = null;

  /** @param executor - the bench's executor (nothing is counted unless it is a tensor-parallel group). */
  constructor(private readonly executor: Executor) {}

  /** Before the timed steps. */
  begin(): void {
    if (this.executor instanceof TensorParallelExecutor) this.start = this.executor.collectiveStats();
  }

  /** After `tokens` timed steps; `keep` false for the warm-up run. */
  end(tokens: number, keep: boolean): void {
    if (!(this.executor instanceof TensorParallelExecutor) || this.start === null) return;
    const now = this.executor.collectiveStats();
    if (keep) {
      this.count.push((now.count - this.start.count) / tokens);
      this.ms.push((now.ms - this.start.ms) / tokens);
    }
  }

  /** The medians, or null when the executor is not a tensor-parallel group. */
  report(median: (xs: number[]) => number): TensorParallelBench | null {
    if (!(this.executor instanceof TensorParallelExecutor) || this.count.length === 0) return null;
    return {
      ranks: this.executor.ranks.length,
      collectivesPerToken: median(this.count),
      collectiveMsPerToken: median(this.ms),
    };
  }
}

/** The bench line of a tensor-parallel run. */
export function describeTensorParallel(t: TensorParallelBench): string {
  return `  tensor parallel: ${t.ranks} ranks, ${t.collectivesPerToken} all-reduces/token, ${t.collectiveMsPerToken.toFixed(3)} ms/token in collectives\n`;
}
