// One request's decoding state, shared by the single-session generator and the batch scheduler: sampling
// with its own seeded RNG, streaming detokenization through the stop matcher, EOS and limits, logprobs.
import type { StreamDecoder } from "@poot/models";
import type { Engine } from "./engine.js";
import { RuntimeError } from "./errors.js";
import { Rng, randomSeed } from "./rng.js";
import { checkSampling, sampleToken, type SamplingOptions } from "./sampling.js";
import type { Session } from "./session.js";
import { StopMatcher } from "./stop.js";

/** Options of a generation. */
export interface GenerateOptions extends SamplingOptions {
  /** Most tokens to generate. */
  readonly maxTokens: number;
  /** Stop strings: generation ends before the first one, which is not emitted (needs a tokenizer). */
  readonly stop?: readonly string[];
  /** Token ids that end generation (default: the model's EOS ids); they are not emitted. */
  readonly stopTokenIds?: readonly number[];
  /** Keep going past EOS tokens. */
  readonly ignoreEos?: boolean;
  /** Report each token's log-probability and this many most likely alternatives (0-20; raw model distribution). */
  readonly logprobs?: number;
}

/** Why generation ended (`cancelled`: the caller stopped it). */
export type FinishReason = "eos" | "stop" | "length" | "cancelled";

/** A token and its log-probability under the raw model distribution (log-softmax of the logits). */
export interface TokenLogprob {
  /** Token id. */
  readonly id: number;
  /** Natural-log probability. */
  readonly logprob: number;
}

/** One streamed event: a sampled token and the text it releases (possibly empty), or trailing text. */
export type GenerationEvent =
  | {
      readonly kind: "token";
      readonly id: number;
      readonly text: string;
      readonly logprob?: number;
      readonly top?: readonly TokenLogprob[];
    }
  | { readonly kind: "text"; readonly text: string };

/** What a finished generation returns. */
export interface GenerationResult {
  /** Generated ids (EOS excluded). */
  readonly ids: number[];
  /** Their text up to any stop string ("" without a tokenizer). */
  readonly text: string;
  /** Why it ended. */
  readonly finishReason: FinishReason;
  /** Prompt tokens run. */
  readonly promptTokens: number;
  /** Milliseconds of the prompt's prefill (to the first logits). */
  readonly prefillMs: number;
  /** Milliseconds of the decode steps after the first token. */
  readonly decodeMs: number;
  /** Decode steps run (tokens generated after the first). */
  readonly decodeSteps: number;
}

/** Log-softmax of the chosen id and the `k` most likely ids, in float64. */
export function tokenLogprobs(
  logits: ArrayLike<number>,
  id: number,
  k: number,
): { logprob: number; top: TokenLogprob[] } {
  let max = -Infinity;
  for (let i = 0; i < logits.length; i++) max = Math.max(max, logits[i]!);
  let z = 0;
  for (let i = 0; i < logits.length; i++) z += Math.exp(logits[i]! - max);
  const lse = max + Math.log(z);
  const top: TokenLogprob[] = [];
  if (k > 0) {
    const order = Array.from({ length: logits.length }, (_, i) => i).sort((a, b) => logits[b]! - logits[a]! || a - b);
    for (const i of order.slice(0, k)) top.push({ id: i, logprob: logits[i]! - lse });
  }
  return { logprob: logits[id]! - lse, top };
}

/**
 * Checks a generation request before any work: sampling parameters, maxTokens, logprobs, a non-empty prompt
 * of in-vocabulary ids that leaves room for one generated token, stop strings only with a tokenizer.
 */
export function checkGenerate(engine: Engine, prompt: readonly number[], options: GenerateOptions): void {
  checkSampling(options);
  if (!Number.isSafeInteger(options.maxTokens) || options.maxTokens < 1)
    throw new RuntimeError("bad-sampling", `maxTokens must be a positive integer, got ${options.maxTokens}`, {
      param: "maxTokens",
      value: options.maxTokens,
    });
  const lp = options.logprobs;
  if (lp !== undefined && !(Number.isInteger(lp) && lp >= 0 && lp <= 20))
    throw new RuntimeError("bad-sampling", `logprobs must be an integer in [0, 20], got ${lp}`, {
      param: "logprobs",
      value: lp,
    });
  if (prompt.length === 0) throw new RuntimeError("bad-tokens", "the prompt has no tokens");
  const V = engine.config.vocabSize;
  for (const id of prompt)
    if (!Number.isInteger(id) || id < 0 || id >= V)
      throw new RuntimeError("bad-tokens", `token id ${id} is outside the vocabulary [0, ${V})`, { value: id });
  if (prompt.length >= engine.context)
    throw new RuntimeError(
      "context-overflow",
      `the prompt has ${prompt.length} tokens; the context holds ${engine.context}`,
      { value: prompt.length },
    );
  if ((options.stop ?? []).length > 0 && engine.tokenizer === null)
    throw new RuntimeError("bad-config", "stop strings need a tokenizer; this engine has none", { param: "stop" });
}

/** The decoding state of one request over one session. */
export class Decoding {
  /** Generated ids. */
  readonly ids: number[] = [];
  /** Text released so far. */
  text = "";
  /** Why it ended, or null while running. */
  finish: FinishReason | null = null;
  private readonly rng: Rng;
  private readonly decoder: StreamDecoder | null;
  private readonly matcher: StopMatcher;
  private readonly eos: readonly number[];

  /** Checks the options; throws RuntimeError on bad ones. */
  constructor(
    engine: Engine,
    readonly session: Session,
    readonly prompt: readonly number[],
    readonly options: GenerateOptions,
  ) {
    checkGenerate(engine, prompt, options);
    const tok = engine.tokenizer;
    const stops = options.stop ?? [];
    this.eos = options.ignoreEos === true ? [] : (options.stopTokenIds ?? engine.config.eosTokenIds);
    this.rng = new Rng(options.seed ?? randomSeed());
    this.decoder = tok === null ? null : tok.streamDecoder({ skipSpecial: true });
    this.matcher = new StopMatcher(stops);
  }

  /**
   * Samples after `logits` and returns the events it releases; sets `finish` when generation ends. While
   * running, the token is committed to the session, so the next `session.step()` computes what follows.
   */
  accept(logits: Float32Array): GenerationEvent[] {
    const s = this.session;
    const id = sampleToken(logits, [...s.tokens, ...s.queued], this.ids, this.options, this.rng);
    return this.#take(id, logits, s.remaining, true);
  }

  /**
   * Whether every token is the plain argmax of the logits (temperature 0, no penalties, no logit bias, no
   * logprobs), so the engine's greedy loop can pick them without the host reading the logits (decision 2201).
   */
  get argmaxOnly(): boolean {
    const o = this.options;
    return (
      o.temperature === 0 &&
      (o.repetitionPenalty ?? 1) === 1 &&
      (o.frequencyPenalty ?? 0) === 0 &&
      (o.presencePenalty ?? 0) === 0 &&
      (o.logitBias === undefined || o.logitBias.size === 0) &&
      o.logprobs === undefined
    );
  }

  /**
   * Takes an id the greedy loop picked (only when {@link argmaxOnly}); `remaining` is the room the session would
   * have left before queueing it, as in {@link accept}. The engine holds the tokens, so nothing is committed here.
   */
  acceptGreedy(id: number, remaining: number): GenerationEvent[] {
    return this.#take(id, null, remaining, false);
  }

  #take(id: number, logits: Float32Array | null, remaining: number, commit: boolean): GenerationEvent[] {
    const s = this.session;
    if (this.eos.includes(id)) {
      this.finish = "eos";
      return this.tail();
    }
    this.ids.push(id);
    const piece = this.matcher.push(this.decoder === null ? "" : this.decoder.push(id));
    this.text += piece.text;
    const lp = this.options.logprobs;
    const events: GenerationEvent[] = [
      lp === undefined || logits === null
        ? { kind: "token", id, text: piece.text }
        : { kind: "token", id, text: piece.text, ...tokenLogprobs(logits, id, lp) },
    ];
    if (piece.stop !== null) this.finish = "stop";
    else if (this.ids.length >= this.options.maxTokens || remaining < 1) this.finish = "length";
    // The last token stays queued too, so a follow-up step continues the sequence.
    if (commit && this.finish !== "stop" && remaining >= 1) s.commit(id);
    if (this.finish === "length") events.push(...this.tail());
    return events;
  }

  /** Ends generation early (e.g. a client went away). */
  cancel(): void {
    if (this.finish === null) this.finish = "cancelled";
  }

  /** Releases held-back text at the end (the decoder's and the stop matcher's). */
  private tail(): GenerationEvent[] {
    const t = this.matcher.push(this.decoder === null ? "" : this.decoder.flush());
    if (t.stop !== null) this.finish = "stop";
    const rest = t.text + (t.stop === null ? this.matcher.flush() : "");
    this.text += rest;
    return rest.length > 0 ? [{ kind: "text", text: rest }] : [];
  }
}
