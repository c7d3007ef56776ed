// The narrow engine surface the server schedules over: tokenize, render chat, begin sequences that sample
// and detokenize themselves, run one batched step, report stats. runtime-engine.ts adapts @poot/runtime to it;
// engine-worker.ts runs that adapter and its scheduler on a worker thread behind the same text-side surface.
import type { ChatMessage } from "@poot/models";
import type { SchedulerOptions, ServeScheduler } from "./scheduler-api.js";

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
  /** Keep the k most likely tokens (0 = off). */
  readonly topK: number;
  /** Drop tokens below minP x the top token's probability (0 = off). */
  readonly minP: number;
  /** HF repetition penalty over prompt and generated tokens (1 = off). */
  readonly repetitionPenalty: number;
  /** OpenAI logit bias: token id -> value added to its logit (empty = off). */
  readonly logitBias: ReadonlyMap<number, number>;
}

/** What one sequence generates: its limits, sampling, stop strings and logprobs. */
export interface SequenceOptions {
  /** Most tokens to generate. */
  readonly maxTokens: number;
  /** Sampling. */
  readonly sampling: SamplingParams;
  /** Stop strings (generation ends before the first; it is not emitted). */
  readonly stop: readonly string[];
  /** null: no logprobs; n >= 0: the chosen token's logprob and the n most likely. */
  readonly logprobs: number | null;
  /** Keep generating past EOS. */
  readonly ignoreEos: boolean;
  /** Constrain the output to JSON (grammar-constrained decoding); absent or null = free text. */
  readonly constraint?: JsonConstraintSpec | null;
}

/**
 * Output constrained to one JSON document: a JSON schema (already checked by the server: it compiles, and its
 * shortest document fits maxTokens), or null for any JSON object. Plain data, so it can cross to a worker thread.
 */
export interface JsonConstraintSpec {
  /** The JSON schema, or null for any JSON object. */
  readonly schema: unknown;
}

/** A token and its log-probability under the raw model distribution. */
export interface TokenLogprob {
  /** Token id. */
  readonly id: number;
  /** Natural-log probability. */
  readonly logprob: number;
}

/** A prompt token's logprob under the model given the tokens before it (null for the first), and the top tokens there. */
export interface PromptLogprob {
  readonly id: number;
  readonly logprob: number | null;
  readonly top: readonly TokenLogprob[] | null;
}

/** What a sequence releases after one step: a sampled token with its text (possibly empty), or trailing text. */
export type SequenceEvent =
  | {
      readonly kind: "token";
      readonly id: number;
      readonly text: string;
      readonly logprob: number | null;
      readonly top: readonly TokenLogprob[] | null;
    }
  | { readonly kind: "text"; readonly text: string };

/** One sequence (one session's KV state and its decoding state) inside the engine. */
export interface EngineSequence {
  /** Tokens in the cache plus tokens queued for the next step. */
  readonly length: number;
  /** Tokens whose keys and values are in the cache (what its KV pages hold; `length` less the queued ones). */
  readonly cached: number;
  /** Tokens generated so far (EOS excluded). */
  readonly generated: number;
  /** Why it ended (EOS, a stop string, max tokens or the context's end), or null while running. */
  readonly finish: "eos" | "stop" | "length" | null;
  /** Samples after the logits of its last step, queues the token for the next step, and returns what it released. */
  accept(logits: Float32Array): SequenceEvent[];
  /** Frees the sequence's KV state; idempotent. */
  release(): void;
}

/** Work counters and memory an engine reports to /metrics. */
export interface EngineStats {
  /** Programs compiled (staged) so far. */
  readonly compiles: number;
  /** Device bytes held, by purpose. */
  readonly deviceBytes: {
    readonly weights: number;
    readonly state: number;
    readonly io: number;
    readonly total: number;
  };
  /** Sequences whose KV state is allocated now (the engine's own count). */
  readonly openSequences: number;
  /** The shared KV page pool: tokens per page, pages in all, held by sequences, promised to admitted ones. */
  readonly kv: {
    readonly pageSize: number;
    readonly pagesTotal: number;
    readonly pagesInUse: number;
    readonly pagesReserved: number;
  };
  /** The prefix cache (absent when off): sessions that hit, prompt tokens served from it, evictions, pages held. */
  readonly prefixCache?: {
    readonly hits: number;
    readonly hitTokens: number;
    readonly evictions: number;
    readonly pages: number;
  };
  /** Blocks across devices (absent when the model runs as one program): hand-offs and the weight pager's counters. */
  readonly blocks?: {
    readonly handoffs: number;
    readonly pageIns: number;
    readonly pageInBytes: number;
    readonly pageOuts: number;
    readonly stallSeconds: number;
    /** Weight bytes read ahead of use (decision 1706). */
    readonly prefetchedBytes: number;
  };
}

/** Where an engine's blocks are (decision 1707): what `GET` / `POST /admin/place` answer. */
export interface PlacementSummary {
  /** The placement in `--place` syntax. */
  readonly place: string;
  /** Units (runs of consecutive blocks on one device) per token. */
  readonly unitsPerToken: number;
  /** Residual-stream hand-offs between devices per token. */
  readonly handoffsPerToken: number;
  /** Weight bytes of the blocks placed on each device. */
  readonly weightBytesByDevice: Readonly<Record<string, number>>;
  /** Relocations done so far. */
  readonly relocations: number;
}

/** What a relocation did: the placement after it, or why it was refused (one line; nothing moved). */
export type RelocateResult = { readonly placement: PlacementSummary } | { readonly error: string };

/** Whether a sequence can begin now: yes, not until KV pages (or lanes) are released, or never (larger than the pool). */
export type Admission = "now" | "wait" | "never";

/** What the HTTP side needs from an engine wherever it runs: sizes, text in and out, and stats. */
export interface ServeEngine {
  /** KV capacity of a sequence in tokens: prompt plus generated tokens must fit. */
  readonly context: number;
  /** Tokens the whole KV cache holds: prompt plus generated tokens of one sequence never exceed it. */
  readonly kvTokens: number;
  /** Vocabulary size: valid token ids are [0, vocabSize). */
  readonly vocabSize: number;
  /** End-of-sequence token ids. */
  readonly eosTokenIds: readonly number[];
  /** Most UTF-8 bytes of input text one token can stand for: a text of B bytes has at least B / maxTokenBytes tokens. */
  readonly maxTokenBytes: number;
  /** Tokens of `text` (with the tokenizer's special tokens, e.g. BOS, when `special`), computed off the event loop. */
  encode(text: string, special: boolean): Promise<number[]>;
  /**
   * Tokens of a chat rendered by the chat template with the generation prompt, computed off the event loop; null
   * when the model has no chat template. Rejects with the template's message when it refuses the conversation.
   * `tools` (OpenAI function tools) are given to the template, as HF apply_chat_template(tools=...) does.
   */
  encodeChat(messages: readonly ChatMessage[], tools?: readonly unknown[] | null): Promise<number[] | null>;
  /** The text of token ids (special tokens kept). */
  textOf(ids: readonly number[]): string;
  /** Width of the model's hidden state (the rows {@link ServeEngine.hidden} returns). */
  readonly hiddenSize: number;
  /**
   * The final hidden state of each token of `ids` after the model's final norm (the LM head's input), row-major
   * [T, hiddenSize]; ids are in the vocabulary and at most a context long (the caller checks).
   */
  hidden(ids: readonly number[]): Promise<Float32Array>;
  /**
   * The logprob of each prompt token after the ones before it, with the `top` most likely tokens there (the first
   * token has none: null); ids are in the vocabulary and at most a context long (the caller checks).
   */
  promptLogprobs(ids: readonly number[], top: number): Promise<PromptLogprob[]>;
  /** The text of one token alone, for logprobs. */
  tokenText(id: number): string;
  /** Counters and memory. */
  stats(): EngineStats;
  /** Where the blocks are; null when the model runs as one program (no placement). Optional. */
  placement?(): PlacementSummary | null;
  /**
   * Moves blocks to the devices of `place` (`--place` syntax) between steps, each block taking its KV / recurrent
   * state (decision 1707); the next step runs every block where it now lives. Optional: an engine without blocks
   * leaves it out or refuses. Results are plain data (no exception crosses for a bad placement).
   */
  relocate?(place: string): RelocateResult | Promise<RelocateResult>;
  /** Frees everything. */
  close(): void;
}

/** An engine the in-process Scheduler (scheduler.ts) steps on the calling thread. */
export interface BatchEngine extends ServeEngine {
  /**
   * Whether a sequence of `prompt` generating up to `maxTokens` can begin now (its KV pages for prompt +
   * maxTokens are free), must wait for others to release theirs, or can never fit the pool; with the pages needed.
   */
  admission(
    prompt: readonly number[],
    maxTokens: number,
  ): { readonly admit: Admission; readonly pages: number; readonly pagesTotal: number };
  /**
   * Opens a sequence with `prompt` queued, reserving KV pages for prompt + maxTokens; throws on options the
   * engine refuses or when those pages are not free (call {@link BatchEngine.admission} first).
   */
  begin(prompt: readonly number[], options: SequenceOptions): EngineSequence;
  /** Runs every sequence's queued tokens as one step; returns the logits [V] after each one's last token. */
  step(seqs: readonly EngineSequence[]): Float32Array[];
}

/**
 * A model whose engine runs off the HTTP thread (the engine worker) and brings its own scheduler, so no engine
 * step ever holds the event loop that answers /health and streams tokens.
 */
export interface RemoteServeEngine extends ServeEngine {
  /** The scheduler over this engine (one per engine). */
  createScheduler(options: SchedulerOptions): ServeScheduler;
}

/** Whether `e` brings its own scheduler (runs its engine elsewhere) rather than being stepped here. */
export function isRemoteEngine(e: BatchEngine | RemoteServeEngine): e is RemoteServeEngine {
  return typeof (e as Partial<RemoteServeEngine>).createScheduler === "function";
}
