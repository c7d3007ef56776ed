// A session: one sequence's KV pages in the engine's shared pool (taken as it grows, given back on release),
// its recurrent-state lane, the tokens it holds, and tokens fed or committed but not yet run.
import type { Engine } from "./engine.js";
import { RuntimeError, invariant } from "./errors.js";

/** One sequence being generated. `feed`/`commit` queue tokens; `step` runs them and returns the next logits. */
export class Session {
  private readonly held: number[] = [];
  private pending: number[] = [];
  private released = false;
  private readonly heldPages: number[] = [];
  /** The prompt whose whole pages go to the prefix cache on release (null: not cached). */
  private cachePrompt: readonly number[] | null = null;

  /**
   * @internal Use {@link Engine.openSession}.
   * @param lane - the session's recurrent-state lane, or null when the model has none.
   * @param reserved - pages promised to this session by the pool, taken first as it grows.
   */
  constructor(
    private readonly engine: Engine,
    readonly id: number,
    /** @internal */ readonly lane: number | null,
    private reserved: number,
  ) {}

  /** The pool pages holding this session's keys and values, in position order. */
  get pages(): readonly number[] {
    return this.heldPages;
  }

  /** Tokens whose keys and values are in the cache. */
  get length(): number {
    return this.held.length;
  }

  /** Tokens in the cache, in order. */
  get tokens(): readonly number[] {
    return this.held;
  }

  /** Tokens queued for the next step. */
  get queued(): readonly number[] {
    return this.pending;
  }

  /** Room left in the context for tokens not yet queued. */
  get remaining(): number {
    return this.engine.context - this.held.length - this.pending.length;
  }

  /** Queues prompt tokens for the next step. */
  feed(ids: readonly number[]): void {
    this.alive();
    const V = this.engine.config.vocabSize;
    for (const id of ids)
      if (!Number.isInteger(id) || id < 0 || id >= V)
        throw new RuntimeError("bad-tokens", `token id ${id} is outside the vocabulary [0, ${V})`, {
          value: id,
          session: this.id,
        });
    if (ids.length > this.remaining) {
      throw new RuntimeError(
        "context-overflow",
        `${ids.length} more tokens do not fit: ${this.held.length} held + ${this.pending.length} queued of a ${this.engine.context}-token context`,
        { value: ids.length, session: this.id },
      );
    }
    this.pending.push(...ids);
  }

  /** Accepts a sampled token: it is queued, so the next step computes the logits after it. */
  commit(id: number): void {
    this.feed([id]);
  }

  /** Runs the queued tokens (and `ids`, if given) and returns the logits after the last one, [V]. */
  step(ids: readonly number[] = []): Float32Array {
    if (ids.length > 0) this.feed(ids);
    this.checkStep();
    const run = this.pending;
    const logits = this.engine.runSequence(this, this.held.length, run);
    this.advance(run);
    return logits;
  }

  /**
   * @internal Adopts the cached pages of the prompt's first `pages.length` whole pages (already retained for it) as
   * held, and marks the prompt for the prefix cache on release. Before the first step only.
   */
  cacheAs(prompt: readonly number[], pages: readonly number[]): void {
    this.cachePrompt = prompt;
    this.heldPages.push(...pages);
    this.held.push(...prompt.slice(0, pages.length * this.engine.pool.pageSize));
  }

  /** Gives the session's pages, reservation and lane back to the pool; the session cannot be used afterwards. */
  release(): void {
    if (this.released) return;
    this.released = true;
    const pool = this.engine.pool;
    // The whole pages of the prompt that were computed go to the prefix cache first (it takes its own reference).
    if (this.cachePrompt !== null && this.engine.prefixCache !== null)
      this.engine.prefixCache.insert(
        this.cachePrompt.slice(0, Math.min(this.cachePrompt.length, this.held.length)),
        this.heldPages,
      );
    pool.release(this.heldPages);
    this.heldPages.length = 0;
    pool.unreserve(this.reserved);
    this.reserved = 0;
    if (this.lane !== null) pool.releaseLane(this.lane);
    this.engine.forget(this);
  }

  /** @internal Takes pages (reserved ones first) until the session can hold `tokens` tokens; `kv-full` when the pool cannot. */
  grow(tokens: number): void {
    const need = this.engine.pool.pagesFor(tokens) - this.heldPages.length;
    if (need <= 0) return;
    const fromReserve = Math.min(need, this.reserved);
    this.heldPages.push(...this.engine.pool.take(need, fromReserve, this.id));
    this.reserved -= fromReserve;
  }

  /** @internal Throws unless the session is open, owned by its engine and has tokens queued. */
  checkStep(): void {
    this.alive();
    if (this.pending.length === 0)
      throw new RuntimeError("bad-tokens", "nothing to run: feed or commit tokens first", { session: this.id });
  }

  /** @internal Runs all queued tokens but the last (a prompt before a batched step); returns the last. */
  prefillAllButLast(): number {
    const last = this.pending[this.pending.length - 1]!;
    if (this.pending.length > 1) {
      const head = this.pending.slice(0, -1);
      this.engine.runSequence(this, this.held.length, head);
      this.held.push(...head);
    }
    this.pending = [last];
    return last;
  }

  /**
   * @internal After a greedy loop (decision 2201): `ran` (the queued token and the ids run after it) is held,
   * nothing stays queued, and pages past the held length go back to the pool (the loop may have grown past it).
   */
  settle(ran: readonly number[]): void {
    this.held.push(...ran);
    this.pending = [];
    const keep = this.engine.pool.pagesFor(this.held.length);
    if (this.heldPages.length > keep) this.engine.pool.release(this.heldPages.splice(keep));
  }

  /** @internal Takes the one queued token back (a generation hands it to `Engine.greedy`). */
  unqueue(): number {
    invariant(this.pending.length === 1, `unqueue with ${this.pending.length} tokens queued`);
    return this.pending.pop()!;
  }

  /** @internal Marks `ran` (the queued tokens) as held in the cache. */
  advance(ran: readonly number[]): void {
    this.held.push(...ran);
    this.pending = this.pending.slice(ran.length);
  }

  private alive(): void {
    if (this.released || !this.engine.owns(this))
      throw new RuntimeError("bad-session", `session ${this.id} was released`, { session: this.id });
  }
}
