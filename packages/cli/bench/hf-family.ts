// One fixtures/hf family through the runtime on a given executor, against transformers' float64 logits:
// the prompt as one prefill, then every position decoded one token at a time (prompt, then the reference
// continuation), and the greedy ids. Shared by the GPU-machine entry points (cuda-fixtures, gpu-apis-h200).
import * as fs from "node:fs";
import * as path from "node:path";
import type { Executor } from "@poot/executor";
import { LoadedModel, openSafetensors } from "@poot/models";
import { Engine, argmax } from "@poot/runtime";

/** max |a - ref| / max |ref| (the fixtures README's agreement measure); NaN counts as a failure. */
export function relErr(a: Float32Array, ref: Float32Array): number {
  let d = 0,
    m = 0;
  for (let i = 0; i < ref.length; i++) {
    d = Math.max(d, Math.abs(a[i]! - ref[i]!));
    m = Math.max(m, Math.abs(ref[i]!));
  }
  return Number.isNaN(d) ? Infinity : d / m;
}

/** What {@link checkHfFamily} measured. */
export interface HfFamilyResult {
  /** Prefill and decode both within the tolerance, and the greedy ids equal. */
  readonly ok: boolean;
  readonly prefillRelErr: number;
  /** The worst decode position. */
  readonly decodeRelErr: number;
  readonly idsEqual: boolean;
  /**
   * Engine.greedy from the prompt (3 steps a launch, so launches cross each other and the pages; on the device
   * where the executor has a greedy loop, decision 2201) gave the reference's greedy ids too.
   */
  readonly greedyLoopIdsEqual: boolean;
  /** Launches the greedy loop ran (0: the executor has none and steps ran one at a time). */
  readonly greedyLaunches: number;
  /** The greedy ids produced. */
  readonly ids: readonly number[];
}

/**
 * Runs the hf fixture family in `dir` with `weights` on `executor` (closed afterwards with the engine) and compares
 * with its `reference.safetensors` within `tol`.
 */
export function checkHfFamily(dir: string, executor: Executor, weights: "f32" | "bf16", tol: number): HfFamilyResult {
  const ref = JSON.parse(fs.readFileSync(path.join(dir, "reference.json"), "utf8")) as {
    prompt_ids: number[];
    greedy_ids: number[];
  };
  const full = openSafetensors(path.join(dir, "reference.safetensors")).readF32Sync("full_logits");
  const engine = new Engine(LoadedModel.open(dir, { weights }), {
    executor,
    context: 64,
    tokenizer: null,
    greedyTokensPerLaunch: 3,
  });
  try {
    const V = engine.config.vocabSize,
      T = ref.prompt_ids.length;
    const row = (r: number): Float32Array => full.subarray(r * V, (r + 1) * V);
    const pre = engine.openSession();
    const prefill = relErr(pre.step(ref.prompt_ids), row(T - 1));
    pre.release();
    const s = engine.openSession();
    let decode = 0;
    let logits: Float32Array = new Float32Array(0);
    for (let t = 0; t < T; t++) {
      logits = s.step([ref.prompt_ids[t]!]);
      decode = Math.max(decode, relErr(logits, row(t)));
    }
    const ids: number[] = [];
    for (let g = 0; g < ref.greedy_ids.length; g++) {
      ids.push(argmax(logits));
      if (g + 1 === ref.greedy_ids.length) break;
      logits = s.step([ref.greedy_ids[g]!]);
      decode = Math.max(decode, relErr(logits, row(T + g)));
    }
    s.release();
    const idsEqual = ids.length === ref.greedy_ids.length && ids.every((x, i) => x === ref.greedy_ids[i]);
    const g = engine.openSession();
    const first = argmax(g.step(ref.prompt_ids));
    const loopIds = [first, ...engine.greedy(g, first, ref.greedy_ids.length - 1)];
    g.release();
    const greedyLoopIdsEqual =
      loopIds.length === ref.greedy_ids.length && loopIds.every((x, i) => x === ref.greedy_ids[i]);
    return {
      ok: prefill <= tol && decode <= tol && idsEqual && greedyLoopIdsEqual,
      greedyLoopIdsEqual,
      greedyLaunches: engine.stats.greedyLaunches,
      prefillRelErr: prefill,
      decodeRelErr: decode,
      idsEqual,
      ids,
    };
  } finally {
    engine.close();
    executor.dispose();
  }
}
