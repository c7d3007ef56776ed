// The engine: one model on one executor. It stages the paged decode programs (chunked prefill sizes, single
// and batched decode) lazily, binds the checkpoint's weights once, owns the one KV page pool every session
// allocates from (decision 0603), and runs sessions' steps through them.
import * as fs from "node:fs";
import * as path from "node:path";
import type { Executor, GreedyLoop, StageInput, StagedProgram, StateSet } from "@poot/executor";
import type { Graph } from "@poot/graph-ir";
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
import { BlockPipeline, type BlockDevice, type PipelineStats, type PlacementReport } from "./blocks/pipeline.js";
import type { PagerStats } from "./blocks/pager.js";
import { WeightReader } from "./blocks/weight-reader.js";
import type { Placement } from "./blocks/placement.js";
import { greedyArgmax, hostGreedyLoop, type GreedyOptions } from "./greedy.js";
import { PrefixCache } from "./prefix-cache.js";
import { KvPool, type KvPoolStats } from "./kv-pool.js";
import { Session } from "./session.js";

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
  readonly stats: EngineStats = {
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
  /** The greedy loop of the single-token program, once made (null: none for this executor or model). */
  private loop: GreedyLoop | null | undefined = undefined;
  /** The session a greedy loop is running for (the host loop reads its pages). */
  private greedySession: Session | null = null;
  private readonly programs = new Map<string, StagedProgram>();
  private readonly sessions = new Set<Session>();
  private nextId = 1;
  /** The one device-side StateSet (KV page pools, recurrent lane pools) every program runs on; made on first use. */
  private shared: StateSet | null = null;
  /** Whether the single-token decode program has been captured (against the shared StateSet). */
  private captured = false;
  /** Whether the traced graphs read a `state_lane` slot (the model has recurrent state). */
  private hasLanes: boolean | null = null;
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
    const cfg = model.config;
    this.context = options.context ?? Math.min(cfg.maxPositions, 2048);
    if (!Number.isSafeInteger(this.context) || this.context < 2)
      throw new RuntimeError("bad-config", `context must be an integer >= 2, got ${options.context}`, {
        param: "context",
        value: options.context,
      });
    this.prefillChunk = options.prefillChunk ?? 64;
    const c = this.prefillChunk;
    if (!Number.isSafeInteger(c) || c < 1 || (c & (c - 1)) !== 0)
      throw new RuntimeError("bad-config", `prefillChunk must be a power of two, got ${c}`, {
        param: "prefillChunk",
        value: c,
      });
    this.tokenizer = options.tokenizer ?? null;
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
    const pages = options.kvPages ?? lanes * Math.ceil(this.context / pageSize);
    if (!Number.isSafeInteger(pages) || pages < 1)
      throw new RuntimeError("bad-config", `kvPages must be a positive integer, got ${pages}`, {
        param: "kvPages",
        value: pages,
      });
    this.paged = { pageSize, pages, lanes };
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
    const m = LoadedModel.open(model, options.weights === undefined ? {} : { weights: options.weights });
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

  /** The paged decode program of `tokens` new tokens for one sequence (staged once). */
  decodeProgram(tokens: number): StagedProgram {
    return this.staged(`decode-${tokens}`, tokens === 1 ? "decode" : "prefill", () =>
      this.model.graph({ kind: "decode", context: this.context, tokens, paged: this.paged }),
    );
  }

  /** The paged batched decode program of `batch` sequences (staged once). */
  batchProgram(batch: number): StagedProgram {
    return this.staged(`batch-${batch}`, "decode", () =>
      this.model.graph({ kind: "batched-decode", batch, context: this.context, paged: this.paged }),
    );
  }

  /** Writes the page-table, slot-map and lane slots of `seqs` running `tokens` new tokens each from their lengths. */
  private writePaging(p: StagedProgram, seqs: readonly { session: Session; start: number }[], tokens: number): void {
    const per = this.pagesPerSequence,
      ps = this.paged.pageSize;
    const table = new Int32Array(seqs.length * per),
      map = new Int32Array(seqs.length * tokens);
    seqs.forEach(({ session, start }, i) => {
      const pages = session.pages;
      table.set(pages, i * per);
      for (let t = 0; t < tokens; t++) {
        const at = start + t;
        map[i * tokens + t] = pages[Math.floor(at / ps)]! * ps + (at % ps);
      }
    });
    p.writeSlot("page_table", table);
    p.writeSlot("slot_map", map);
    if (this.needsLane())
      p.writeSlot(
        "state_lane",
        seqs.map(({ session }) => session.lane!),
      );
  }

  private staged(name: string, mode: "decode" | "prefill", trace: () => Graph): StagedProgram {
    let p = this.programs.get(name);
    if (p === undefined) {
      const t0 = performance.now();
      if (this.pipeline !== null) p = this.pipeline.program(name, mode, trace);
      else {
        const g = trace();
        p = this.executor.stage(this.options.compileGraph === undefined ? g : this.options.compileGraph(g, mode), {
          name,
        });
      }
      this.stats.stageMs += performance.now() - t0;
      this.stats.programsStaged++;
      this.programs.set(name, p);
    }
    return p;
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
      this.decodeProgram(c);
      onProgress?.(i + 1, sizes.length, `decode-${c}`);
    });
  }

  /** @internal Runs `ids` for one session in prefill chunks; returns the logits of the last token [V]. */
  runSequence(session: Session, start: number, ids: readonly number[]): Float32Array {
    invariant(ids.length > 0, "runSequence with no tokens");
    session.grow(start + ids.length);
    const state = this.state();
    const V = this.config.vocabSize;
    let pos = start,
      off = 0;
    let last: Float32Array | null = null;
    for (const c of this.chunks(ids.length)) {
      const t0 = performance.now();
      const p = this.decodeProgram(c);
      p.writeSlot("ids", ids.slice(off, off + c));
      p.writeSlot("pos", [pos]);
      this.writePaging(p, [{ session, start: pos }], c);
      if (c === 1) this.decodeStep(p, state);
      else p.run(state);
      const logits = p.readOutput("logits") as Float32Array;
      // readOutput without `into` returns a fresh copy: a one-token step's logits are the row itself (a 0.5 MB
      // slice a token was measurable on the CUDA backend, decision 0807).
      last = logits.length === V ? logits : logits.slice((c - 1) * V, c * V);
      const ms = performance.now() - t0;
      if (c > 1) {
        this.stats.prefillTokens += c;
        this.stats.prefillMs += ms;
      } else {
        this.stats.decodeTokens += 1;
        this.stats.decodeMs += ms;
      }
      pos += c;
      off += c;
    }
    return last!;
  }

  /**
   * The logits of every token of `ids` [T·V] (row-major [T, V]) from one decode program of T tokens at
   * position 0 in a fresh session's pages (released afterwards): a whole prompt's logits in one step.
   */
  promptLogits(ids: readonly number[]): Float32Array {
    const s = this.openSession();
    try {
      s.feed(ids);
      s.grow(ids.length);
      const p = this.decodeProgram(ids.length);
      p.writeSlot("ids", ids);
      p.writeSlot("pos", [0]);
      this.writePaging(p, [{ session: s, start: 0 }], ids.length);
      p.run(this.state());
      return (p.readOutput("logits") as Float32Array).slice();
    } finally {
      s.release();
    }
  }

  /**
   * The final hidden state of every token of `ids` after the final norm (the LM head's input) [T·D], row-major
   * [T, D], from one stateless prefill program (no KV pages used). The ids run padded to a power of two (causal
   * attention: padding after the last token changes none of the rows before it), so at most log2(context) + 1
   * programs are staged. Embeddings pool these rows.
   */
  promptHidden(ids: readonly number[]): Float32Array {
    return this.statelessPrefill(ids, "hidden");
  }

  /**
   * The logits of every token of `ids` [T·V] (row-major [T, V]) like {@link Engine.promptLogits}, but from a
   * stateless prefill padded to a power of two: no KV pages are taken (it runs while the pool is full) and at most
   * log2(context) + 1 programs are staged. Prompt logprobs read these rows.
   */
  prefillLogits(ids: readonly number[]): Float32Array {
    return this.statelessPrefill(ids, "logits");
  }

  private statelessPrefill(ids: readonly number[], output: "logits" | "hidden"): Float32Array {
    if (ids.length === 0) throw new RuntimeError("bad-tokens", "no token ids given");
    if (ids.length > this.context)
      throw new RuntimeError("context-overflow", `${ids.length} tokens do not fit the context of ${this.context}`, {
        value: ids.length,
      });
    const V = this.config.vocabSize;
    for (const id of ids)
      if (!Number.isSafeInteger(id) || id < 0 || id >= V)
        throw new RuntimeError("bad-tokens", `token id ${id} is outside the vocabulary [0, ${V})`, { value: id });
    if (this.pipeline !== null)
      throw new RuntimeError(
        "bad-config",
        `stateless ${output} of an engine split into blocks across devices is not supported`,
      );
    let T = 1;
    while (T < ids.length) T *= 2;
    const p = this.staged(`${output}-${T}`, "prefill", () => this.model.graph({ kind: "prefill", tokens: T, output }));
    const padded = new Int32Array(T);
    padded.set(ids);
    p.writeSlot("ids", padded);
    p.run();
    const width = output === "hidden" ? this.config.hiddenSize : V;
    return (p.readOutput(output) as Float32Array).slice(0, ids.length * width);
  }

  /**
   * One single-token step: captured once against the shared StateSet (CUDA graphs, command buffers, host
   * schedules) and replayed for every session after, since which pages and lane a step uses are slots.
   */
  private decodeStep(p: StagedProgram, state: StateSet): void {
    // A pipeline captures what each unit's device can and runs the rest (its capture always succeeds).
    if (this.pipeline === null && !this.executor.caps.capture) {
      p.run(state);
      return;
    }
    if (!this.captured) {
      if (!p.capture(state)) {
        p.run(state);
        return;
      }
      this.captured = true;
      this.stats.captures++;
    } else this.stats.replays++;
    p.replay();
  }

  /**
   * One decode step of several sessions together (one token each, through the batched decode graph); a
   * session with more than one token pending first runs the others alone. Returns each session's logits [V].
   */
  stepBatch(sessions: readonly Session[]): Float32Array[] {
    if (new Set(sessions).size !== sessions.length)
      throw new RuntimeError("bad-session", "a session appears twice in one batch");
    for (const s of sessions) s.checkStep();
    if (sessions.length === 1) return [sessions[0]!.step()];
    const B = sessions.length,
      V = this.config.vocabSize;
    const last = sessions.map((s) => s.prefillAllButLast());
    const prog = this.batchProgram(B);
    for (const s of sessions) s.grow(s.length + 1);
    const t0 = performance.now();
    // Every session's pages and lane are in the one shared StateSet: the step reads them through its slots.
    prog.writeSlot("ids", last);
    prog.writeSlot(
      "pos",
      sessions.map((s) => s.length),
    );
    this.writePaging(
      prog,
      sessions.map((s) => ({ session: s, start: s.length })),
      1,
    );
    prog.run(this.state());
    const logits = prog.readOutput("logits") as Float32Array;
    const rows = sessions.map((s, i) => {
      s.advance([last[i]!]);
      return logits.slice(i * V, (i + 1) * V);
    });
    this.stats.decodeTokens += B;
    this.stats.decodeMs += performance.now() - t0;
    return rows;
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
    if (!Number.isSafeInteger(count) || count < 0)
      throw new RuntimeError("bad-config", `greedy count must be a non-negative integer, got ${count}`, {
        param: "count",
        value: count,
      });
    if (session.queued.length > 0)
      throw new RuntimeError("bad-tokens", "greedy: the session has queued tokens; run them first", {
        session: session.id,
      });
    session.feed([first]);
    const out: number[] = [];
    const loop = count > 1 ? this.greedyLoopOf() : null;
    if (loop !== null) {
      const K = loop.tokensPerLaunch;
      const start = session.length;
      const launches = Math.min(Math.ceil(count / K), Math.floor((this.context - start) / K));
      if (launches > 0) {
        const t0 = performance.now();
        session.grow(start + launches * K);
        const p = this.decodeProgram(1);
        p.writeSlot("ids", [first]);
        p.writeSlot("pos", [start]);
        this.writePaging(p, [{ session, start }], 1);
        this.greedySession = session;
        loop.begin(start);
        let launched = 0,
          read = 0,
          stopped = false,
          bad = false;
        // Launches queued past a stop are not waited for: their steps write KV entries past the session's length
        // (in pages it held when they were queued), and later work on the stream runs after them.
        while (!stopped && read < launches) {
          while (launched < launches && launched - read < loop.maxInFlight) {
            loop.launch();
            launched++;
          }
          const ids = loop.read(read++);
          for (const id of ids) {
            if (id < 0) {
              bad = stopped = true;
              break;
            }
            out.push(id);
            if (options.stop?.(id, out.length - 1) === true || out.length === count) {
              stopped = true;
              break;
            }
          }
        }
        this.stats.greedyLaunches += launched;
        this.greedySession = null;
        // Held: `first` and every id but the last (returned, not run); after a bad row, the token that produced it.
        const ran = bad ? [first, ...out] : [first, ...out.slice(0, -1)];
        this.stats.greedyRolledBack += launched * K - ran.length;
        session.settle(ran);
        this.stats.decodeTokens += out.length;
        this.stats.decodeMs += performance.now() - t0;
        if (bad) throw new RuntimeError("bad-logits", "no token has a finite logit", { session: session.id });
        if (stopped || out.length === count) return out;
        session.feed([out[out.length - 1]!]);
      }
    }
    // One host step at a time: every executor without a device loop, and what a device loop leaves at the context's end.
    while (out.length < count) {
      const logits = session.step();
      const id = greedyArgmax(logits);
      if (id < 0) throw new RuntimeError("bad-logits", "no token has a finite logit", { session: session.id });
      out.push(id);
      if (options.stop?.(id, out.length - 1) === true || out.length === count) break;
      session.feed([id]);
    }
    return out;
  }

  /** Whether {@link greedy} runs launches of several steps (a device loop, or `greedyLoop: "host-launches"`). */
  greedyLoopAvailable(): boolean {
    return this.greedyLoopOf() !== null;
  }

  /** The greedy loop of the single-token decode program (made once), or null when steps run one at a time. */
  private greedyLoopOf(): GreedyLoop | null {
    if (this.loop !== undefined) return this.loop;
    const mode = this.options.greedyLoop ?? "auto";
    const K = this.options.greedyTokensPerLaunch ?? 8;
    if (!Number.isSafeInteger(K) || K < 1)
      throw new RuntimeError("bad-config", `greedyTokensPerLaunch must be a positive integer, got ${K}`, {
        param: "greedyTokensPerLaunch",
        value: K,
      });
    this.loop = null;
    if (mode === "steps" || this.pipeline !== null || this.needsLane()) return null;
    const p = this.decodeProgram(1);
    const opts = { logits: "logits", tokensPerLaunch: K, pageSize: this.paged.pageSize };
    if (mode === "host-launches")
      this.loop = hostGreedyLoop(p, this.state(), opts, () => this.greedySession?.pages ?? []);
    else this.loop = this.executor.greedyLoop?.(p, this.state(), opts) ?? null;
    return this.loop;
  }

  /** Releases every session and staged program and closes the model's checkpoint; the executor stays the caller's. */
  close(): void {
    this.loop?.dispose();
    this.loop = undefined;
    for (const s of [...this.sessions]) s.release();
    this.prefixCache?.clear();
    for (const p of this.programs.values()) p.dispose();
    this.shared?.dispose();
    this.pipeline?.dispose();
    this.shared = null;
    this.programs.clear();
    this.model.close();
  }
}
