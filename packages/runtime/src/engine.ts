// The engine: one model on one executor. It stages the paged decode programs (chunked prefill sizes, single
// and batched decode) lazily, binds the checkpoint's weights once, owns the one KV page pool every session
// allocates from (decision 0603), and runs sessions' steps through them.
import * as fs from "node:fs";
import * as path from "node:path";
import type { Executor, StagedProgram, StateSet } from "@poot/executor";
import {
  checkpointConsts,
  isGGUF,
  loadTokenizer,
  LoadedModel,
  type ModelConfig,
  type OpenModelOptions,
  type PagedLayout,
  type Tokenizer,
} from "@poot/models";
import { RuntimeError, invariant } from "./errors.js";
import { BlockPipeline, type PipelineStats, type PlacementReport } from "./blocks/pipeline.js";
import type { PagerStats } from "./blocks/pager.js";
import { WeightReader } from "./blocks/weight-reader.js";
import type { Placement } from "./blocks/placement.js";
import { EngineGreedy } from "./engine-greedy.js";
import {
  emptyEngineStats,
  engineLayout,
  prefillChunks,
  type EngineOptions,
  type EngineStats,
  type EngineStatsSnapshot,
} from "./engine-options.js";
import { promptLogits, runSequence, statelessPrefill, stepBatch } from "./engine-steps.js";
import { EnginePrograms, writePaging, type PagedSequence } from "./engine-programs.js";
import type { GreedyOptions } from "./greedy.js";
import { PrefixCache } from "./prefix-cache.js";
import { KvPool } from "./kv-pool.js";
import { Session } from "./session.js";

export { prefillChunks, type EngineOptions, type EngineStats, type EngineStatsSnapshot };

/**
 * One model on one executor; sessions opened from it share its weights and staged programs. The engine
 * binds the model's weights to the executor, so give each engine its own executor.
 */
export class Engine {
  /** Most tokens one session can hold. */
  readonly context: number;
  /** The paged layout every program is traced with. */
  readonly paged: PagedLayout;
  /** The shared page pool's allocator. */
  readonly pool: KvPool;
  /** Largest prefill chunk. */
  readonly prefillChunk: number;
  /** The tokenizer, or null when the engine runs ids only. */
  readonly tokenizer: Tokenizer | null;
  /** The prefix cache over the page pool, or null when off. */
  readonly prefixCache: PrefixCache | null;
  /** Work counters. */
  readonly stats: EngineStats = emptyEngineStats();
  private readonly sessions = new Set<Session>();
  private nextId = 1;
  /** The one device-side StateSet (KV page pools, recurrent lane pools) every program runs on; made on first use. */
  private shared: StateSet | null = null;
  /** Whether the traced graphs read a `state_lane` slot (the model has recurrent state). */
  private hasLanes: boolean | null = null;
  /** The programs staged so far (made in the constructor, once the pipeline is known). */
  private readonly programs: EnginePrograms;
  /** Greedy decoding's loop. */
  private readonly greedyRunner = new EngineGreedy(this);
  /** The blocks on their devices, when the engine was given a placement; null runs one program on `executor`. */
  readonly pipeline: BlockPipeline | null = null;

  /**
   * @param model - an opened model (its checkpoint stays owned by the caller until {@link Engine.close}).
   * @param options - executor, context and prefill chunk.
   */
  constructor(
    readonly model: LoadedModel,
    readonly options: EngineOptions,
  ) {
    ({
      context: this.context,
      prefillChunk: this.prefillChunk,
      paged: this.paged,
    } = engineLayout(model.config, options));
    this.tokenizer = options.tokenizer ?? null;
    const { pageSize, pages, lanes } = this.paged;
    this.pool = new KvPool(pageSize, pages, lanes);
    this.prefixCache = options.prefixCache === true ? new PrefixCache(this.pool) : null;
    const weights = checkpointConsts(model.checkpoint);
    if (options.placement === undefined) options.executor.bindWeights(weights);
    else {
      const devices = options.devices ?? [];
      const compile = options.compileGraph;
      const paging =
        options.budgets === undefined
          ? undefined
          : {
              budgets: options.budgets,
              factories: options.deviceFactories ?? {},
              // Never the cached source: a paged block's weights are read again each time it comes back.
              reader: new WeightReader(model.checkpoint, options.prefetch ?? true),
            };
      this.pipeline = new BlockPipeline(
        devices,
        options.placement,
        compile,
        () => this.model.graph({ kind: "decode", context: this.context, tokens: 1, paged: this.paged }),
        paging,
      );
      for (const ex of new Set(devices.map((d) => d.executor))) ex.bindWeights(weights);
    }
    this.programs = new EnginePrograms(options.executor, this.pipeline, options.compileGraph, this.stats);
  }

  /**
   * Moves blocks to the devices of `placement` in the middle of a session (decision 1703): each moved block's
   * State goes with it and its weights are read on its new device; the next step runs it there.
   */
  relocate(placement: Placement): void {
    if (this.pipeline === null)
      throw new RuntimeError("bad-placement", "relocation needs an engine made with a placement", {
        param: "placement",
      });
    this.pipeline.relocate(placement);
  }

  /** The placement, units and hand-offs per token, and weight bytes per device; null without a placement. */
  placementReport(): PlacementReport | null {
    return this.pipeline?.report() ?? null;
  }

  /** The pager's counters (page-ins, bytes, stall time); null without budgets. */
  get pagerStats(): PagerStats | null {
    return this.pipeline?.pagerStats ?? null;
  }

  /** The pipeline's counters (hand-offs, relocations); null without a placement. */
  get pipelineStats(): PipelineStats | null {
    return this.pipeline?.stats ?? null;
  }

  /** Pages in one row of the page table (a full context). */
  get pagesPerSequence(): number {
    return Math.ceil(this.context / this.paged.pageSize);
  }

  /** Work counters and the KV pool's page and lane counts. */
  snapshot(): EngineStatsSnapshot {
    return { ...this.stats, kv: this.pool.stats };
  }

  /** Whether sessions need a recurrent-state lane (the model has recurrent state: the graphs read `state_lane`). */
  needsLane(): boolean {
    this.hasLanes ??= this.decodeProgram(1).schema.slots.has("state_lane");
    return this.hasLanes;
  }

  /** @internal The shared StateSet of every program (zeroed on creation). */
  state(): StateSet {
    this.shared ??= this.pipeline !== null ? this.pipeline.state() : this.decodeProgram(1).createState();
    return this.shared;
  }

  /** Opens a model folder or GGUF file, with its tokenizer when it has one, on `options.executor`. */
  static load(model: string, options: EngineOptions & OpenModelOptions): Engine {
    const { weights, activations } = options;
    const m = LoadedModel.open(model, {
      ...(weights === undefined ? {} : { weights }),
      ...(activations === undefined ? {} : { activations }),
    });
    try {
      const hasTokenizer = isGGUF(model) || fs.existsSync(path.join(model, "tokenizer.json"));
      const tokenizer =
        options.tokenizer !== undefined ? options.tokenizer : hasTokenizer ? loadTokenizer(model) : null;
      return new Engine(m, { ...options, tokenizer });
    } catch (e) {
      m.close();
      throw e;
    }
  }

  /** The model's hyperparameters. */
  get config(): ModelConfig {
    return this.model.config;
  }

  /** The executor. */
  get executor(): Executor {
    return this.options.executor;
  }

  /**
   * Opens a session. It holds no KV pages until it runs tokens (it takes pages from the shared pool as it
   * grows, or from `reservePages` promised up front) and one recurrent-state lane when the model has
   * recurrent state (`RuntimeError("kv-full")` when every lane is held).
   */
  openSession(options: { readonly reserveTokens?: number; readonly prompt?: readonly number[] } = {}): Session {
    const id = this.nextId++;
    const lane = this.needsLane() ? this.pool.takeLane(id) : null;
    // With the prefix cache, the prompt's cached whole pages are adopted (at least one prompt token is left to run,
    // so the first step has logits to give); they are retained before anything is evicted.
    const cache = lane === null ? this.prefixCache : null;
    const prompt = options.prompt;
    const shared =
      cache === null || prompt === undefined
        ? []
        : cache.match(prompt, Math.floor((prompt.length - 1) / this.pool.pageSize));
    this.pool.retain(shared);
    let reserved = 0;
    if (options.reserveTokens !== undefined) {
      reserved = Math.max(0, this.pool.pagesFor(Math.min(options.reserveTokens, this.context)) - shared.length);
      if (cache !== null && reserved > this.pool.available) cache.evict(reserved - this.pool.available);
      if (!this.pool.reserve(reserved)) {
        this.pool.release(shared);
        if (lane !== null) this.pool.releaseLane(lane);
        throw new RuntimeError(
          "kv-full",
          `${reserved} KV page(s) cannot be reserved: ${this.pool.available} of ${this.pool.pages} free`,
          { value: reserved, session: id },
        );
      }
    }
    const s = new Session(this, id, lane, reserved);
    if (cache !== null && prompt !== undefined) s.cacheAs(prompt, shared);
    this.sessions.add(s);
    return s;
  }

  /**
   * KV pages a session of `prompt` reserving `reserveTokens` would still need (its cached prefix pages aside), and
   * the pages it could have now: free and unpromised, plus those the prefix cache alone holds (evictable), less the
   * cached prefix's own evictable pages, which it adopts rather than frees.
   */
  admissionPages(
    prompt: readonly number[],
    reserveTokens: number,
  ): { readonly need: number; readonly available: number } {
    const all = this.pool.pagesFor(Math.min(reserveTokens, this.context));
    const cache = this.prefixCache;
    if (cache === null || this.needsLane()) return { need: all, available: this.pool.available };
    const shared = cache.match(prompt, Math.floor((prompt.length - 1) / this.pool.pageSize), true);
    const sharedOnlyCached = shared.filter((p) => this.pool.holders(p) === 1).length;
    return {
      need: Math.max(0, all - shared.length),
      available: this.pool.available + cache.evictable - sharedOnlyCached,
    };
  }

  /** Sessions open now. */
  get openSessions(): number {
    return this.sessions.size;
  }

  /** @internal Forgets a released session. */
  forget(s: Session): void {
    this.sessions.delete(s);
  }

  /** @internal Whether `s` is an open session of this engine. */
  owns(s: Session): boolean {
    return this.sessions.has(s);
  }

  /**
   * The paged decode program of `tokens` new tokens for one sequence (staged once). With `logits: "last"` (a prefill
   * chunk, `tokens` > 1) the head runs on the last token only and `logits` is that row [V]; default every row [T·V].
   */
  decodeProgram(tokens: number, logits: "all" | "last" = "all"): StagedProgram {
    const last = logits === "last" && tokens > 1;
    return this.programs.staged(
      last ? `prefill-${tokens}` : `decode-${tokens}`,
      tokens === 1 ? "decode" : "prefill",
      () =>
        this.model.graph({
          kind: "decode",
          context: this.context,
          tokens,
          paged: this.paged,
          ...(last ? { logits: "last" as const } : {}),
        }),
    );
  }

  /** The paged batched decode program of `batch` sequences (staged once). */
  batchProgram(batch: number): StagedProgram {
    return this.programs.staged(`batch-${batch}`, "decode", () =>
      this.model.graph({ kind: "batched-decode", batch, context: this.context, paged: this.paged }),
    );
  }

  /** @internal Writes the page-table, slot-map and lane slots of `seqs` running `tokens` new tokens each. */
  writePaging(p: StagedProgram, seqs: readonly PagedSequence[], tokens: number): void {
    writePaging(
      p,
      { pagesPerSequence: this.pagesPerSequence, pageSize: this.paged.pageSize, lanes: this.needsLane() },
      seqs,
      tokens,
    );
  }

  /** The prefill chunk sizes a prompt of `n` tokens runs in: powers of two, largest first. */
  chunks(n: number): number[] {
    return prefillChunks(n, this.prefillChunk);
  }

  /**
   * Stages every program a single-session generation can use (each prefill chunk size and decode), calling
   * `onProgress(done, total, name)` after each; later steps then stage nothing.
   */
  prepare(onProgress?: (done: number, total: number, name: string) => void): void {
    const sizes: number[] = [];
    for (let c = this.prefillChunk; c >= 1; c >>= 1) sizes.push(c);
    sizes.forEach((c, i) => {
      this.decodeProgram(c, "last");
      onProgress?.(i + 1, sizes.length, c === 1 ? "decode-1" : `prefill-${c}`);
    });
  }

  /** @internal Runs `ids` for one session in prefill chunks; returns the logits of the last token [V]. */
  runSequence(session: Session, start: number, ids: readonly number[]): Float32Array {
    return runSequence(this, this.programs, session, start, ids);
  }

  /**
   * The logits of every token of `ids` [T·V] (row-major [T, V]) from one decode program of T tokens at
   * position 0 in a fresh session's pages (released afterwards): a whole prompt's logits in one step.
   */
  promptLogits(ids: readonly number[]): Float32Array {
    return promptLogits(this, ids);
  }

  /**
   * The final hidden state of every token of `ids` after the final norm (the LM head's input) [T·D], row-major
   * [T, D], from one stateless prefill program (no KV pages used). The ids run padded to a power of two (causal
   * attention: padding after the last token changes none of the rows before it), so at most log2(context) + 1
   * programs are staged. Embeddings pool these rows.
   */
  promptHidden(ids: readonly number[]): Float32Array {
    return statelessPrefill(this, this.programs, ids, "hidden");
  }

  /**
   * The logits of every token of `ids` [T·V] (row-major [T, V]) like {@link Engine.promptLogits}, but from a
   * stateless prefill padded to a power of two: no KV pages are taken (it runs while the pool is full) and at most
   * log2(context) + 1 programs are staged. Prompt logprobs read these rows.
   */
  prefillLogits(ids: readonly number[]): Float32Array {
    return statelessPrefill(this, this.programs, ids, "logits");
  }

  /**
   * One decode step of several sessions together (one token each, through the batched decode graph); a
   * session with more than one token pending first runs the others alone. Returns each session's logits [V].
   */
  stepBatch(sessions: readonly Session[]): Float32Array[] {
    return stepBatch(this, sessions);
  }

  /**
   * Greedy decoding: commits `first` to `session` (which must have nothing queued) and runs `count` single-token
   * steps, each on the previous step's argmax; returns the `count` ids (fewer when `options.stop` stops). The
   * session then holds `first` and every returned id but the last, exactly as a loop of `step([id])` would leave
   * it: steps a device loop ran past the end are rolled back (their KV entries lie past the session's length,
   * and pages past it go back to the pool). Ids are the argmax with the lowest index among equal maxima;
   * `bad-logits` when no logit is finite.
   */
  greedy(session: Session, first: number, count: number, options: GreedyOptions = {}): number[] {
    return this.greedyRunner.run(session, first, count, options);
  }

  /** Whether {@link greedy} runs launches of several steps (a device loop, or `greedyLoop: "host-launches"`). */
  greedyLoopAvailable(): boolean {
    return this.greedyRunner.loopOf() !== null;
  }

  /** Releases every session and staged program and closes the model's checkpoint; the executor stays the caller's. */
  close(): void {
    this.greedyRunner.dispose();
    for (const s of [...this.sessions]) s.release();
    this.prefixCache?.clear();
    this.programs.dispose();
    this.shared?.dispose();
    this.pipeline?.dispose();
    this.shared = null;
    this.model.close();
  }
}
