// Log-probabilities of a row of logits for the `logprobs` / `top_logprobs` response fields: a float64
// log-softmax of the model's raw logits (before temperature and penalties), as OpenAI-compatible servers report.

/** A token and its log-probability. */
export interface TokenLogprob {
  /** Token id. */
  readonly id: number;
  /** Natural log of its probability under the model. */
  readonly logprob: number;
}

/** The chosen token's log-probability and the `top` most likely tokens (most likely first, ties by lower id). */
export function tokenLogprobs(logits: ArrayLike<number>, chosen: number, top: number): { readonly logprob: number; readonly top: TokenLogprob[] } {
  let max = -Infinity;
  for (let i = 0; i < logits.length; i++) max = Math.max(max, logits[i]!);
  let sum = 0;
  for (let i = 0; i < logits.length; i++) sum += Math.exp(logits[i]! - max);
  const lse = max + Math.log(sum);
  const best: TokenLogprob[] = [];
  if (top > 0) {
    // A partial selection: keep the `top` largest in a small sorted array (top <= 20).
    for (let i = 0; i < logits.length; i++) {
      const l = logits[i]!;
      if (best.length === top && l <= best[best.length - 1]!.logprob) continue;
      let j = best.length;
      while (j > 0 && best[j - 1]!.logprob < l) j--;
      best.splice(j, 0, { id: i, logprob: l });
      if (best.length > top) best.pop();
    }
  }
  return { logprob: logits[chosen]! - lse, top: best.map((t) => ({ id: t.id, logprob: t.logprob - lse })) };
}
