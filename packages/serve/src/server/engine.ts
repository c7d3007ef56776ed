// The narrow engine surface the server schedules over: tokenize, render chat, open sequences, run one
// batched step, sample, match stop strings, and report stats. runtime-engine.ts adapts @poot/runtime to it.
import type { ChatMessage } from "@poot/models";

/** Sampling parameters of one sequence, already range-checked by the server. */
export interface SamplingParams {
  /** 0 = greedy. */
  readonly temperature: number;
  /** Nucleus mass in (0, 1]. */
  readonly topP: number;
  /** Seed of the sequence's random source; absent = a random seed. */
  readonly seed?: number;
  /** OpenAI frequency penalty. */
  readonly frequencyPenalty: number;
  /** OpenAI presence penalty. */
  readonly presencePenalty: number;
}

/** One sequence (one session's KV state) inside the engine. */
export interface EngineSequence {
  /** Tokens in the cache plus tokens queued for the next step. */
  readonly length: number;
  /** Queues tokens (the prompt, then each sampled token) for the next step. */
  feed(ids: readonly number[]): void;
  /** Frees the sequence's KV state; idempotent. */
  release(): void;
}

/** Picks the next token from a row of logits. */
export type Sampler = (logits: Float32Array, generated: readonly number[]) => number;

/** Incremental detokenization: text released by each id, and what is held back at the end. */
export interface TextStream {
  /** Text completed by `id` (may be empty while a multi-byte character is incomplete). */
  push(id: number): string;
  /** Text still held back. */
  flush(): string;
}

/** Incremental stop-string matching over streamed text. */
export interface StopStream {
  /** Text safe to emit now, and the stop string if one completed (text before it is emitted, it is not). */
  push(text: string): { readonly text: string; readonly stop: string | null };
  /** Text held back as a possible stop prefix, released at the end. */
  flush(): string;
}

/** Work counters and memory an engine reports to /metrics. */
export interface EngineStats {
  /** Programs compiled (staged) so far. */
  readonly compiles: number;
  /** Device bytes held, by purpose. */
  readonly deviceBytes: { readonly weights: number; readonly state: number; readonly io: number; readonly total: number };
  /** Sequences whose KV state is allocated now (the engine's own count). */
  readonly openSequences: number;
}

/** What the server needs from an inference engine. */
export interface ServeEngine {
  /** KV capacity of a sequence in tokens: prompt plus generated tokens must fit. */
  readonly context: number;
  /** Vocabulary size: valid token ids are [0, vocabSize). */
  readonly vocabSize: number;
  /** End-of-sequence token ids. */
  readonly eosTokenIds: readonly number[];
  /** Tokens of `text` (with the tokenizer's special tokens, e.g. BOS, when `special`). */
  encode(text: string, special: boolean): number[];
  /** The prompt text of a chat, or null when the model has no chat template. */
  renderChat(messages: readonly ChatMessage[]): string | null;
  /** The text of token ids (special tokens kept). */
  textOf(ids: readonly number[]): string;
  /** The text of one token alone, for logprobs. */
  tokenText(id: number): string;
  /** A fresh incremental detokenizer (special tokens skipped). */
  textStream(): TextStream;
  /** A fresh stop matcher over `stops`. */
  stopStream(stops: readonly string[]): StopStream;
  /** A fresh sampler. */
  sampler(params: SamplingParams): Sampler;
  /** Opens an empty sequence; throws when no KV memory is left. */
  open(): EngineSequence;
  /** Runs every sequence's queued tokens as one step; returns the logits [V] after each one's last token. */
  step(seqs: readonly EngineSequence[]): Float32Array[];
  /** Counters and memory. */
  stats(): EngineStats;
  /** Frees everything. */
  close(): void;
}
