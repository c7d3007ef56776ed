// Forward passes of `poot logits` / `poot generate` on an executor backend (vulkan, ...): the model's decode
// graph staged through @poot/runtime's Engine, one prefill for the prompt, then greedy steps with the KV cache.
import type { Executor } from "@poot/executor";
import { argmax, type LoadedModel } from "@poot/models";
import { Engine, type BlockDevice, type EngineOptions, type Placement } from "@poot/runtime";

/** What the engine stages instead of the traced graph (e.g. graph-plan's Program for a target). */
export type CompileGraph = NonNullable<EngineOptions["compileGraph"]>;

/** Where the blocks go (decision 1701): a placement and its devices, or nothing for one program on `executor`. */
export interface PlacedOn {
  readonly placement?: Placement;
  readonly devices?: readonly BlockDevice[];
  readonly budgets?: Readonly<Record<string, number>>;
  readonly deviceFactories?: Readonly<Record<string, () => Executor>>;
}

/** An engine sized for `tokens` positions; it owns `m` from now on (closing the engine closes the model). */
function engineFor(
  m: LoadedModel,
  executor: Executor,
  tokens: number,
  compileGraph?: CompileGraph,
  placed: PlacedOn = {},
): Engine {
  const context = Math.max(2, Math.min(m.config.maxPositions, tokens));
  return new Engine(m, {
    executor,
    context,
    maxSequences: 1,
    ...(compileGraph === undefined ? {} : { compileGraph }),
    ...placed,
  });
}

/** The prompt's logits [T, V] from one prefill step of T tokens. Closes `m`. */
export function executorLogits(m: LoadedModel, executor: Executor, ids: readonly number[]): Float32Array {
  const engine = engineFor(m, executor, ids.length);
  try {
    return engine.promptLogits(ids);
  } finally {
    engine.close();
  }
}

/**
 * Greedy ids after the prompt (at most `maxTokens`, stopping after a `stop` id), staging `compileGraph(graph)`
 * instead of each traced graph when given, with the blocks where `placed` says. Closes `m`.
 */
export function executorGreedy(
  m: LoadedModel,
  executor: Executor,
  ids: readonly number[],
  maxTokens: number,
  stop: readonly number[],
  compileGraph?: CompileGraph,
  placed: PlacedOn = {},
): number[] {
  const engine = engineFor(m, executor, ids.length + maxTokens, compileGraph, placed);
  try {
    const s = engine.openSession();
    const out: number[] = [];
    let logits = s.step(ids);
    for (;;) {
      const next = argmax(logits);
      out.push(next);
      if (out.length >= maxTokens || stop.includes(next)) return out;
      logits = s.step([next]);
    }
  } finally {
    engine.close();
  }
}
