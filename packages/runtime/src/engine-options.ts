// The engine's options, its work counters and the checks that turn options into a paged layout: what an
// Engine is made from and what it counts, apart from how it runs.
import type { Executor, StageInput } from "@poot/executor";
import type { Graph } from "@poot/graph-ir";
import type { ModelConfig, PagedLayout, Tokenizer } from "@poot/models";
import type { BlockDevice } from "./blocks/pipeline.js";
import type { Placement } from "./blocks/placement.js";
import type { Engine } from "./engine.js";
import { RuntimeError } from "./errors.js";
import type { KvPoolStats } from "./kv-pool.js";

/** Options of {@link Engine}. */
export interface EngineOptions {
  /** The backend to run on. */
  readonly executor: Executor;
  /** Most tokens one session can hold (default: the model's max positions, at most 2048). */
  readonly context?: number;
  /** Tokens per KV page, a power of two (default 16). */
  readonly pageSize?: number;
  /** Most sequences with recurrent state at once (lanes of the recurrent-state pools; default 8). */
  readonly maxSequences?: number;
  /** Pages in the shared KV pool (default: `maxSequences` full contexts). */
  readonly kvPages?: number;
  /** Largest prefill chunk, a power of two (default 64); prompts run in power-of-two chunks up to it. */
  readonly prefillChunk?: number;
  /**
   * Keep the KV pages of finished prompts in a prefix cache (decision 2704): a session opened with a prompt adopts
   * the cached pages of its longest whole-page prefix instead of computing them. Off by default; models with
   * recurrent state never share.
   */
  readonly prefixCache?: boolean;
  /** The tokenizer, for text generation; {@link Engine.load} reads the model's own. */
  readonly tokenizer?: Tokenizer | null;
  /**
   * Turns each traced graph into what is staged, e.g. a graph-plan `compile` for a target (a Program has
   * the CompiledGraph shape); `mode` says whether the graph decodes one token per sequence or prefills.
   * Default: the primitive graph as traced.
   */
  readonly compileGraph?: (graph: Graph, mode: "decode" | "prefill", device?: string) => StageInput;
  /**
   * Where each block runs (decision 1701): with a placement the model is cut into blocks (embedding, layers,
   * head) and each run of consecutive blocks on one device is staged there as one unit; `devices` names every
   * device it uses. Without one, the whole model runs on `executor` as one program (as before blocks).
   * `compileGraph` then receives each unit's graph and its device's name.
   */
  readonly placement?: Placement;
  /** The devices a placement may name (their executors get the model's weights bound). */
  readonly devices?: readonly BlockDevice[];
  /**
   * Weight budgets in bytes by device name (decision 1704): a device whose placed weights exceed its budget
   * pages its blocks in and out (least recently used out first), each paged-in block on a fresh executor from
   * `deviceFactories`. Needs a placement.
   */
  readonly budgets?: Readonly<Record<string, number>>;
  /** Fresh executors of the devices that may page. */
  readonly deviceFactories?: Readonly<Record<string, () => Executor>>;
  /**
   * How {@link Engine.greedy} runs (decision 2201): `"auto"` (default) on the executor's device greedy loop where it
   * has one (CUDA: argmax and the next step's inputs on the device, several steps per graph launch), else one host
   * step at a time; `"steps"` always one host step at a time; `"host-launches"` the device loop's launch/read shape
   * over host steps (its reference, on any executor).
   */
  readonly greedyLoop?: "auto" | "steps" | "host-launches";
  /** Decode steps per launch of a greedy loop (default 8). */
  readonly greedyTokensPerLaunch?: number;
  /**
   * Paging: read the next block's weights on a reader thread while the current block runs (decision 1706).
   * Default true; false reads every tensor when a paged-in block first needs it.
   */
  readonly prefetch?: boolean;
}

/** Counters of the work an engine has done. */
export interface EngineStats {
  /** Tokens run through prefill chunks of more than one token. */
  prefillTokens: number;
  /** Milliseconds spent in those chunks. */
  prefillMs: number;
  /** Tokens run one per sequence (single or batched decode). */
  decodeTokens: number;
  /** Milliseconds spent in decode steps. */
  decodeMs: number;
  /** Programs staged. */
  programsStaged: number;
  /** Milliseconds spent tracing and staging programs. */
  stageMs: number;
  /** Single-token steps recorded with `capture` (one per change of session). */
  captures: number;
  /** Single-token steps run by `replay` of a captured step. */
  replays: number;
  /** Launches of a greedy loop (several decode steps each). */
  greedyLaunches: number;
  /** Decode steps a greedy loop ran past a stop or the requested count and rolled back. */
  greedyRolledBack: number;
}

/** Engine counters plus the KV pool's, for /metrics. */
export type EngineStatsSnapshot = EngineStats & { readonly kv: KvPoolStats };

/**
 * Splits `n` prompt tokens into power-of-two chunks of at most `maxChunk` (a power of two), largest first,
 * so a backend stages at most log2(maxChunk) + 1 programs whatever the prompt length.
 */
export function prefillChunks(n: number, maxChunk: number): number[] {
  const out: number[] = [];
  let left = n;
  while (left > 0) {
    let c = maxChunk;
    while (c > left) c >>= 1;
    out.push(c);
    left -= c;
  }
  return out;
}

/** Zeroed work counters of a new engine. */
export function emptyEngineStats(): EngineStats {
  return {
    prefillTokens: 0,
    prefillMs: 0,
    decodeTokens: 0,
    decodeMs: 0,
    programsStaged: 0,
    stageMs: 0,
    captures: 0,
    replays: 0,
    greedyLaunches: 0,
    greedyRolledBack: 0,
  };
}

/** The context, prefill chunk and paged layout an engine of `cfg` runs with: {@link EngineOptions} checked. */
export interface EngineLayout {
  /** Most tokens one session can hold. */
  readonly context: number;
  /** Largest prefill chunk. */
  readonly prefillChunk: number;
  /** The paged layout every program is traced with. */
  readonly paged: PagedLayout;
}

/** Checks `options`' sizes against `cfg` and fills their defaults; `RuntimeError("bad-config")` names a bad one. */
export function engineLayout(cfg: ModelConfig, options: EngineOptions): EngineLayout {
  const context = options.context ?? Math.min(cfg.maxPositions, 2048);
  if (!Number.isSafeInteger(context) || context < 2)
    throw new RuntimeError("bad-config", `context must be an integer >= 2, got ${options.context}`, {
      param: "context",
      value: options.context,
    });
  const prefillChunk = options.prefillChunk ?? 64;
  const c = prefillChunk;
  if (!Number.isSafeInteger(c) || c < 1 || (c & (c - 1)) !== 0)
    throw new RuntimeError("bad-config", `prefillChunk must be a power of two, got ${c}`, {
      param: "prefillChunk",
      value: c,
    });
  const pageSize = options.pageSize ?? 16;
  if (!Number.isSafeInteger(pageSize) || pageSize < 1 || (pageSize & (pageSize - 1)) !== 0)
    throw new RuntimeError("bad-config", `pageSize must be a power of two, got ${pageSize}`, {
      param: "pageSize",
      value: pageSize,
    });
  const lanes = options.maxSequences ?? 8;
  if (!Number.isSafeInteger(lanes) || lanes < 1)
    throw new RuntimeError("bad-config", `maxSequences must be a positive integer, got ${lanes}`, {
      param: "maxSequences",
      value: lanes,
    });
  const pages = options.kvPages ?? lanes * Math.ceil(context / pageSize);
  if (!Number.isSafeInteger(pages) || pages < 1)
    throw new RuntimeError("bad-config", `kvPages must be a positive integer, got ${pages}`, {
      param: "kvPages",
      value: pages,
    });
  return { context, prefillChunk, paged: { pageSize, pages, lanes } };
}
