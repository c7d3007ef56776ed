// Shared by the block tests: a greedy run through an engine (optionally relocating blocks at given tokens) and
// the "same answer anywhere" gate: identical greedy ids, every step's logits within 1e-6 of the reference run
// relative to the reference row's max |logit|.
import type { Engine, Placement } from "@poot/runtime";

/** Ids and per-step logits of a greedy run. */
export interface Run {
  readonly ids: number[];
  readonly logits: Float32Array[];
}

function argmax(row: ArrayLike<number>): number {
  let best = 0;
  for (let i = 1; i < row.length; i++) if (row[i]! > row[best]!) best = i;
  return best;
}

/** Greedy `n` tokens after `prompt`; before the token with index k in `moves`, relocates to `moves[k]`. */
export function greedyRun(
  engine: Engine,
  prompt: readonly number[],
  n: number,
  moves: ReadonlyMap<number, Placement> = new Map(),
): Run {
  const s = engine.openSession();
  try {
    const ids: number[] = [],
      logits: Float32Array[] = [];
    let row = s.step(prompt);
    for (let k = 0; k < n; k++) {
      logits.push(row.slice());
      ids.push(argmax(row));
      if (k === n - 1) break;
      const m = moves.get(k + 1);
      if (m !== undefined) engine.relocate(m);
      row = s.step([ids[k]!]);
    }
    return { ids, logits };
  } finally {
    s.release();
  }
}

/** max over steps of max |a - ref| / max |ref|. */
export function maxRelErr(a: Run, ref: Run): number {
  let worst = 0;
  ref.logits.forEach((r, k) => {
    const x = a.logits[k]!;
    let d = 0,
      m = 0;
    for (let i = 0; i < r.length; i++) {
      d = Math.max(d, Math.abs(x[i]! - r[i]!));
      m = Math.max(m, Math.abs(r[i]!));
    }
    worst = Math.max(worst, d / m);
  });
  return worst;
}

/** The gate: throws naming the first difference when `a` does not give the same answer as `ref`. */
export function assertSameAnswer(a: Run, ref: Run, what: string, tol = 1e-6): void {
  const k = ref.ids.findIndex((id, i) => a.ids[i] !== id);
  if (k >= 0 || a.ids.length !== ref.ids.length)
    throw new Error(`${what}: greedy ids differ at step ${k}: ${a.ids.join(",")} vs ${ref.ids.join(",")}`);
  const e = maxRelErr(a, ref);
  if (!(e <= tol)) throw new Error(`${what}: logits differ by ${e.toExponential(2)} (relative), more than ${tol}`);
}
