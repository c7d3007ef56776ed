// The engine: one model on one executor. It stages the decode programs (chunked prefill sizes, single and
// batched decode) lazily, binds the checkpoint's weights once, and runs sessions' steps through them.
import * as fs from "node:fs";
import * as path from "node:path";
import type { Executor, StagedProgram, StateSet } from "@poot/executor";
import { checkpointConsts, isGGUF, loadTokenizer, LoadedModel, type ModelConfig, type OpenModelOptions, type Tokenizer } from "@poot/models";
import { RuntimeError, invariant } from "./errors.js";
import { Session } from "./session.js";

/** Options of {@link Engine}. */
export interface EngineOptions {
  /** The backend to run on. */
  readonly executor: Executor;
  /** KV capacity of every session, in tokens (default: the model's max positions, at most 2048). */
  readonly context?: number;
  /** Largest prefill chunk, a power of two (default 64); prompts run in power-of-two chunks up to it. */
  readonly prefillChunk?: number;
  /** The tokenizer, for text generation; {@link Engine.load} reads the model's own. */
  readonly tokenizer?: Tokenizer | null;
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
}

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
  /** KV capacity of every session, in tokens. */
  readonly context: number;
  /** Largest prefill chunk. */
  readonly prefillChunk: number;
  /** The tokenizer, or null when the engine runs ids only. */
  readonly tokenizer: Tokenizer | null;
  /** Work counters. */
  readonly stats: EngineStats = { prefillTokens: 0, prefillMs: 0, decodeTokens: 0, decodeMs: 0, programsStaged: 0, stageMs: 0 };
  private readonly programs = new Map<string, StagedProgram>();
  private readonly batchStates = new Map<number, StateSet>();
  private readonly sessions = new Set<Session>();
  private nextId = 1;

  /**
   * @param model - an opened model (its checkpoint stays owned by the caller until {@link Engine.close}).
   * @param options - executor, context and prefill chunk.
   */
  constructor(readonly model: LoadedModel, readonly options: EngineOptions) {
    const cfg = model.config;
    this.context = options.context ?? Math.min(cfg.maxPositions, 2048);
    if (!Number.isSafeInteger(this.context) || this.context < 2) throw new RuntimeError("bad-config", `context must be an integer >= 2, got ${options.context}`, { param: "context", value: options.context });
    this.prefillChunk = options.prefillChunk ?? 64;
    const c = this.prefillChunk;
    if (!Number.isSafeInteger(c) || c < 1 || (c & (c - 1)) !== 0) throw new RuntimeError("bad-config", `prefillChunk must be a power of two, got ${c}`, { param: "prefillChunk", value: c });
    this.tokenizer = options.tokenizer ?? null;
    options.executor.bindWeights(checkpointConsts(model.checkpoint));
  }

  /** Opens a model folder or GGUF file, with its tokenizer when it has one, on `options.executor`. */
  static load(model: string, options: EngineOptions & OpenModelOptions): Engine {
    const m = LoadedModel.open(model, options.weights === undefined ? {} : { weights: options.weights });
    try {
      const hasTokenizer = isGGUF(model) || fs.existsSync(path.join(model, "tokenizer.json"));
      const tokenizer = options.tokenizer !== undefined ? options.tokenizer : hasTokenizer ? loadTokenizer(model) : null;
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

  /** Opens a session with a zeroed KV (and recurrent) State of `context` tokens. */
  openSession(): Session {
    const s = new Session(this, this.nextId++, this.decodeProgram(1).createState());
    this.sessions.add(s);
    return s;
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

  /** The decode program of `tokens` new tokens for one sequence (staged once). */
  decodeProgram(tokens: number): StagedProgram {
    return this.staged(`decode-${tokens}`, () => this.model.graph({ kind: "decode", context: this.context, tokens }));
  }

  /** The batched decode program of `batch` sequences (staged once). */
  batchProgram(batch: number): StagedProgram {
    return this.staged(`batch-${batch}`, () => this.model.graph({ kind: "batched-decode", batch, context: this.context }));
  }

  /** @internal The batch StateSet that sessions' lanes are gathered into for a batched step. */
  batchState(batch: number): StateSet {
    let s = this.batchStates.get(batch);
    if (s === undefined) {
      s = this.batchProgram(batch).createState();
      this.batchStates.set(batch, s);
    }
    return s;
  }

  private staged(name: string, trace: () => Parameters<Executor["stage"]>[0]): StagedProgram {
    let p = this.programs.get(name);
    if (p === undefined) {
      const t0 = performance.now();
      p = this.executor.stage(trace(), { name });
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
  runSequence(state: StateSet, start: number, ids: readonly number[]): Float32Array {
    invariant(ids.length > 0, "runSequence with no tokens");
    const V = this.config.vocabSize;
    let pos = start, off = 0;
    let last: Float32Array | null = null;
    for (const c of this.chunks(ids.length)) {
      const t0 = performance.now();
      const p = this.decodeProgram(c);
      p.writeSlot("ids", ids.slice(off, off + c));
      p.writeSlot("pos", [pos]);
      p.run(state);
      const logits = p.readOutput("logits") as Float32Array;
      last = logits.slice((c - 1) * V, c * V);
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
   * One decode step of several sessions together (one token each, through the batched decode graph); a
   * session with more than one token pending first runs the others alone. Returns each session's logits [V].
   */
  stepBatch(sessions: readonly Session[]): Float32Array[] {
    if (new Set(sessions).size !== sessions.length) throw new RuntimeError("bad-session", "a session appears twice in one batch");
    for (const s of sessions) s.checkStep();
    if (sessions.length === 1) return [sessions[0]!.step()];
    const B = sessions.length, V = this.config.vocabSize;
    const last = sessions.map((s) => s.prefillAllButLast());
    const prog = this.batchProgram(B);
    const bs = this.batchState(B);
    const t0 = performance.now();
    // Sessions own contiguous per-sequence State; a batched step gathers their lanes and scatters them back.
    sessions.forEach((s, i) => bs.copyLanes(s.state, 0, i));
    prog.writeSlot("ids", last);
    prog.writeSlot("pos", sessions.map((s) => s.length));
    prog.run(bs);
    const logits = prog.readOutput("logits") as Float32Array;
    const rows = sessions.map((s, i) => {
      s.state.copyLanes(bs, i, 0);
      s.advance([last[i]!]);
      return logits.slice(i * V, (i + 1) * V);
    });
    this.stats.decodeTokens += B;
    this.stats.decodeMs += performance.now() - t0;
    return rows;
  }

  /** Releases every session and staged program and closes the model's checkpoint; the executor stays the caller's. */
  close(): void {
    for (const s of [...this.sessions]) s.release();
    for (const p of this.programs.values()) p.dispose();
    for (const s of this.batchStates.values()) s.dispose();
    this.programs.clear();
    this.batchStates.clear();
    this.model.close();
  }
}
