// Token sampling: repetition / frequency / presence penalties on the logits, then greedy, or temperature,
// top-k, top-p (nucleus) and min-p filters over a float64 softmax and one seeded draw.
import { RuntimeError } from "./errors.js";
import type { Rng } from "./rng.js";

/** Sampling parameters; the defaults sample from the unmodified distribution at temperature 1. */
export interface SamplingOptions {
  /** 0 = greedy (argmax); > 0 divides the logits (default 1). */
  readonly temperature?: number;
  /** Keep only the k most likely tokens (0 or absent = off). */
  readonly topK?: number;
  /** Keep the smallest set of most likely tokens whose probability sums to at least p (1 = off). */
  readonly topP?: number;
  /** Drop tokens whose probability is below minP × the top token's (0 = off). */
  readonly minP?: number;
  /** CTRL/HF repetition penalty over every token in the session (prompt and generated): > 1 discourages (1 = off). */
  readonly repetitionPenalty?: number;
  /** OpenAI frequency penalty: subtracts penalty × count of each generated token (0 = off). */
  readonly frequencyPenalty?: number;
  /** OpenAI presence penalty: subtracts penalty from every token generated at least once (0 = off). */
  readonly presencePenalty?: number;
  /**
   * OpenAI logit_bias: token id -> a value added to that token's logit before anything else (the penalties, the
   * temperature and the filters all see the biased logits); -100 / 100 in practice ban / force a token.
   */
  readonly logitBias?: ReadonlyMap<number, number>;
  /** Seed of the random source; the same seed, prompt and options give the same tokens. */
  readonly seed?: number;
}

/** The candidate tokens a sampler draws from, most likely first, with renormalized probabilities. */
export interface Distribution {
  /** Token ids, by decreasing probability (ties: lower id first). */
  readonly ids: Int32Array;
  /** Their probabilities (sum 1). */
  readonly probs: Float64Array;
}

/** Checks sampling options, throwing a RuntimeError naming the bad parameter. */
export function checkSampling(o: SamplingOptions): void {
  const bad = (param: string, value: unknown, want: string): never => {
    throw new RuntimeError("bad-sampling", `${param} must be ${want}, got ${String(value)}`, { param, value });
  };
  const t = o.temperature;
  if (t !== undefined && !(Number.isFinite(t) && t >= 0)) bad("temperature", t, "a finite number >= 0");
  if (o.topK !== undefined && !(Number.isInteger(o.topK) && o.topK >= 0)) bad("topK", o.topK, "an integer >= 0");
  if (o.topP !== undefined && !(o.topP > 0 && o.topP <= 1)) bad("topP", o.topP, "in (0, 1]");
  if (o.minP !== undefined && !(o.minP >= 0 && o.minP <= 1)) bad("minP", o.minP, "in [0, 1]");
  if (o.repetitionPenalty !== undefined && !(Number.isFinite(o.repetitionPenalty) && o.repetitionPenalty > 0))
    bad("repetitionPenalty", o.repetitionPenalty, "a finite number > 0");
  for (const p of ["frequencyPenalty", "presencePenalty"] as const) {
    const v = o[p];
    if (v !== undefined && !Number.isFinite(v)) bad(p, v, "a finite number");
  }
  if (o.seed !== undefined && !Number.isSafeInteger(o.seed)) bad("seed", o.seed, "an integer");
  for (const [id, v] of o.logitBias ?? []) {
    if (!Number.isSafeInteger(id) || id < 0) bad("logitBias", id, "keyed by token ids (integers >= 0)");
    if (!Number.isFinite(v)) bad("logitBias", v, "finite numbers");
  }
}

/**
 * Applies the logit bias and the penalties in place: the bias first (OpenAI: added to the model's logits), then
 * repetition (HF: positive logits divided, negative multiplied) over `context` (every token in the session), then
 * frequency and presence over `generated` (OpenAI). Bias ids outside the vocabulary are ignored (callers check).
 */
export function applyPenalties(
  logits: Float32Array,
  context: readonly number[],
  generated: readonly number[],
  o: SamplingOptions,
): void {
  for (const [id, v] of o.logitBias ?? []) if (id < logits.length) logits[id] = logits[id]! + v;
  const rep = o.repetitionPenalty ?? 1;
  if (rep !== 1) {
    for (const id of new Set(context)) {
      const l = logits[id]!;
      logits[id] = l > 0 ? l / rep : l * rep;
    }
  }
  const freq = o.frequencyPenalty ?? 0,
    pres = o.presencePenalty ?? 0;
  if (freq !== 0 || pres !== 0) {
    const counts = new Map<number, number>();
    for (const id of generated) counts.set(id, (counts.get(id) ?? 0) + 1);
    for (const [id, n] of counts) logits[id] = logits[id]! - n * freq - pres;
  }
}

/** Index of the largest logit (the lowest index among equal maxima); RuntimeError `bad-logits` if none is finite. */
export function argmax(logits: ArrayLike<number>): number {
  let best = 0;
  for (let i = 1; i < logits.length; i++) if (logits[i]! > logits[best]!) best = i;
  // NaN compares false, so an all-NaN row would silently pick token 0.
  if (!(logits[best]! > -Infinity))
    throw new RuntimeError("bad-logits", `no token has a finite logit (max ${logits[best]})`, { value: logits[best] });
  return best;
}

/**
 * The distribution a non-greedy sampler draws from: softmax(logits / temperature) in float64, then top-k,
 * top-p and min-p filters (in that order, each on the renormalized survivors), renormalized.
 */
export function samplingDistribution(logits: ArrayLike<number>, o: SamplingOptions): Distribution {
  const t = o.temperature ?? 1;
  if (t === 0) return { ids: Int32Array.of(argmax(logits)), probs: Float64Array.of(1) };
  const n = logits.length;
  let max = -Infinity;
  for (let i = 0; i < n; i++) max = Math.max(max, logits[i]!);
  const order: number[] = [];
  const p = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    const e = Math.exp((logits[i]! - max) / t);
    p[i] = e;
    if (e > 0) order.push(i);
  }
  if (order.length === 0)
    throw new RuntimeError("bad-logits", `no token has a finite probability (max logit ${max})`, { value: max });
  order.sort((a, b) => p[b]! - p[a]! || a - b);
  let keep = order.length;
  const topK = o.topK ?? 0;
  if (topK > 0) keep = Math.min(keep, topK);
  const topP = o.topP ?? 1;
  if (topP < 1) {
    let mass = 0;
    // Cumulative mass over the top-k survivors, renormalized to them.
    let total = 0;
    for (let i = 0; i < keep; i++) total += p[order[i]!]!;
    let cut = keep;
    for (let i = 0; i < keep; i++) {
      mass += p[order[i]!]! / total;
      if (mass >= topP) {
        cut = i + 1;
        break;
      }
    }
    keep = cut;
  }
  const minP = o.minP ?? 0;
  if (minP > 0) {
    const floor = minP * p[order[0]!]!;
    let cut = 1;
    while (cut < keep && p[order[cut]!]! >= floor) cut++;
    keep = cut;
  }
  const ids = Int32Array.from(order.slice(0, keep));
  const probs = new Float64Array(keep);
  let sum = 0;
  for (let i = 0; i < keep; i++) sum += p[ids[i]!]!;
  for (let i = 0; i < keep; i++) probs[i] = p[ids[i]!]! / sum;
  return { ids, probs };
}

/** Draws one token from a distribution with one uniform number. */
export function drawToken(d: Distribution, rng: Rng): number {
  const u = rng.next();
  let acc = 0;
  for (let i = 0; i < d.ids.length; i++) {
    acc += d.probs[i]!;
    if (u < acc) return d.ids[i]!;
  }
  // Rounding can leave the cumulative sum a hair below 1.
  return d.ids[d.ids.length - 1]!;
}

/** Penalties, then greedy or a seeded draw: the next token after `logits` (not modified). */
export function sampleToken(
  logits: Float32Array,
  context: readonly number[],
  generated: readonly number[],
  o: SamplingOptions,
  rng: Rng,
): number {
  const penalized = Float32Array.from(logits);
  applyPenalties(penalized, context, generated, o);
  if ((o.temperature ?? 1) === 0) return argmax(penalized);
  return drawToken(samplingDistribution(penalized, o), rng);
}
