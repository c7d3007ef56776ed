// Generation over a session: prefill the prompt, then sample, stream the detokenized text through the stop
// matcher, and step until EOS, a stop string, the token limit or the context's end.
import type { StreamDecoder } from "@poot/models";
import type { Engine } from "./engine.js";
import { RuntimeError } from "./errors.js";
import { Rng, randomSeed } from "./rng.js";
import { checkSampling, sampleToken, type SamplingOptions } from "./sampling.js";
import type { Session } from "./session.js";
import { StopMatcher } from "./stop.js";

/** Options of {@link generate}. */
export interface GenerateOptions extends SamplingOptions {
  /** Most tokens to generate. */
  readonly maxTokens: number;
  /** Stop strings: generation ends before the first one, which is not emitted (needs a tokenizer). */
  readonly stop?: readonly string[];
  /** Token ids that end generation (default: the model's EOS ids); they are not emitted. */
  readonly stopTokenIds?: readonly number[];
  /** Keep going past EOS tokens. */
  readonly ignoreEos?: boolean;
}

/** Why generation ended. */
export type FinishReason = "eos" | "stop" | "length";

/** One streamed event: a sampled token and the text it releases (possibly empty), or trailing text. */
export type GenerationEvent =
  | { readonly kind: "token"; readonly id: number; readonly text: string }
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

/**
 * Generates after `prompt` in `session` (a fresh session, or one continuing a conversation), yielding
 * events as tokens are sampled; the generator's return value is the {@link GenerationResult}.
 */
export function* generate(engine: Engine, session: Session, prompt: readonly number[], options: GenerateOptions): Generator<GenerationEvent, GenerationResult, void> {
  checkSampling(options);
  if (!Number.isSafeInteger(options.maxTokens) || options.maxTokens < 1) throw new RuntimeError("bad-sampling", `maxTokens must be a positive integer, got ${options.maxTokens}`, { param: "maxTokens", value: options.maxTokens });
  const tok = engine.tokenizer;
  const stops = options.stop ?? [];
  if (stops.length > 0 && tok === null) throw new RuntimeError("bad-config", "stop strings need a tokenizer; this engine has none", { param: "stop" });
  const eos = options.ignoreEos === true ? [] : options.stopTokenIds ?? engine.config.eosTokenIds;
  const rng = new Rng(options.seed ?? randomSeed());
  const decoder: StreamDecoder | null = tok === null ? null : tok.streamDecoder({ skipSpecial: true });
  const matcher = new StopMatcher(stops);
  const ids: number[] = [];
  let text = "";
  let finish: FinishReason = "length";
  const t0 = performance.now();
  if (prompt.length === 0) throw new RuntimeError("bad-tokens", "the prompt has no tokens");
  let logits = session.step(prompt);
  const prefillMs = performance.now() - t0;
  let decodeMs = 0, decodeSteps = 0;
  for (;;) {
    const id = sampleToken(logits, [...session.tokens, ...session.queued], ids, options, rng);
    if (eos.includes(id)) {
      finish = "eos";
      break;
    }
    ids.push(id);
    const piece = matcher.push(decoder === null ? "" : decoder.push(id));
    text += piece.text;
    yield { kind: "token", id, text: piece.text };
    if (piece.stop !== null) {
      finish = "stop";
      break;
    }
    if (ids.length >= options.maxTokens || session.remaining < 1) break;
    const t1 = performance.now();
    logits = session.step([id]);
    decodeMs += performance.now() - t1;
    decodeSteps++;
  }
  // Leave the last sampled token queued so a follow-up step continues the sequence.
  if (finish !== "eos" && ids.length > 0 && session.remaining >= 1) session.commit(ids[ids.length - 1]!);
  if (finish !== "stop") {
    const tail = matcher.push(decoder === null ? "" : decoder.flush());
    const rest = tail.text + (tail.stop === null ? matcher.flush() : "");
    if (tail.stop !== null) finish = "stop";
    if (rest.length > 0) {
      text += rest;
      yield { kind: "text", text: rest };
    }
  }
  return { ids, text, finishReason: finish, promptTokens: prompt.length, prefillMs, decodeMs, decodeSteps };
}

/** Runs {@link generate} to the end and returns its result (events dropped). */
export function generateAll(engine: Engine, session: Session, prompt: readonly number[], options: GenerateOptions): GenerationResult {
  const it = generate(engine, session, prompt, options);
  for (;;) {
    const r = it.next();
    if (r.done === true) return r.value;
  }
}

/** {@link generate} as an async generator that yields to the event loop between tokens (for servers). */
export async function* generateAsync(engine: Engine, session: Session, prompt: readonly number[], options: GenerateOptions): AsyncGenerator<GenerationEvent, GenerationResult, void> {
  const it = generate(engine, session, prompt, options);
  for (;;) {
    const r = it.next();
    if (r.done === true) return r.value;
    yield r.value;
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
}
