// The engine's shared KV page pool (decision 0603): which pages of the device-side pool State are free, which
// sequences hold which pages, pages promised to admitted requests, and the recurrent-state lanes.
import { RuntimeError, invariant } from "./errors.js";

/** Page-pool counters, e.g. for /metrics. */
export interface KvPoolStats {
  /** Token rows per page. */
  readonly pageSize: number;
  /** Pages in the pool. */
  readonly pagesTotal: number;
  /** Pages held by sessions now. */
  readonly pagesInUse: number;
  /** Pages promised to sessions by {@link KvPool.reserve} and not yet taken. */
  readonly pagesReserved: number;
  /** Pages neither in use nor reserved. */
  readonly pagesFree: number;
  /** Recurrent-state lanes (0 when the model has none). */
  readonly lanesTotal: number;
  /** Lanes held by sessions now. */
  readonly lanesInUse: number;
}

/** A free list of pages and lanes; sessions take pages as they grow and give them back on release. */
export class KvPool {
  private readonly freePages: number[];
  private readonly freeLanes: number[];
  private reserved = 0;
  /** Holders of each page (sessions sharing a cached prefix, and the prefix cache); 0 = free. */
  private readonly refs: Int32Array;

  /**
   * @param pageSize - token rows per page.
   * @param pages - pages in the pool.
   * @param lanes - recurrent-state lanes (0 when the model has no recurrent state).
   */
  constructor(
    readonly pageSize: number,
    readonly pages: number,
    readonly lanes: number,
  ) {
    // Lowest ids first (pop from the end).
    this.freePages = Array.from({ length: pages }, (_, i) => pages - 1 - i);
    this.freeLanes = Array.from({ length: lanes }, (_, i) => lanes - 1 - i);
    this.refs = new Int32Array(pages);
  }

  /** Holders of `page` (0 when free). */
  holders(page: number): number {
    return this.refs[page]!;
  }

  /** Adds a holder to pages already taken (a session adopting a cached prefix, or the cache keeping a page). */
  retain(pages: readonly number[]): void {
    for (const p of pages) {
      invariant(this.refs[p]! > 0, `page ${p} retained while free`);
      this.refs[p]!++;
    }
  }

  /** Pages needed to hold `tokens` tokens. */
  pagesFor(tokens: number): number {
    return Math.ceil(tokens / this.pageSize);
  }

  /** Pages that can be reserved or taken now (free and not promised). */
  get available(): number {
    return this.freePages.length - this.reserved;
  }

  /** Current counters. */
  get stats(): KvPoolStats {
    return {
      pageSize: this.pageSize,
      pagesTotal: this.pages,
      pagesInUse: this.pages - this.freePages.length,
      pagesReserved: this.reserved,
      pagesFree: this.freePages.length - this.reserved,
      lanesTotal: this.lanes,
      lanesInUse: this.lanes - this.freeLanes.length,
    };
  }

  /** Promises `n` pages to a caller (taken later with `fromReserve`); false when fewer are available. */
  reserve(n: number): boolean {
    invariant(Number.isSafeInteger(n) && n >= 0, `reserve(${n})`);
    if (n > this.available) return false;
    this.reserved += n;
    return true;
  }

  /** Returns `n` promised pages that were never taken. */
  unreserve(n: number): void {
    invariant(n >= 0 && n <= this.reserved, `unreserve(${n}) of ${this.reserved}`);
    this.reserved -= n;
  }

  /**
   * Takes `n` pages: first `fromReserve` of the caller's promised pages, the rest from what is available.
   * Throws `RuntimeError("kv-full")` (taking nothing) when they are not there.
   */
  take(n: number, fromReserve: number, session: number): number[] {
    invariant(
      fromReserve >= 0 && fromReserve <= n && fromReserve <= this.reserved,
      `take(${n}, ${fromReserve}) of ${this.reserved} reserved`,
    );
    const extra = n - fromReserve;
    if (extra > this.available) {
      throw new RuntimeError(
        "kv-full",
        `the KV page pool is full: ${extra} more page(s) of ${this.pageSize} tokens needed, ${Math.max(0, this.available)} of ${this.pages} free`,
        { value: extra, session },
      );
    }
    this.reserved -= fromReserve;
    const out: number[] = [];
    for (let i = 0; i < n; i++) {
      const p = this.freePages.pop()!;
      this.refs[p] = 1;
      out.push(p);
    }
    return out;
  }

  /** Drops one holder of each page; a page with none left is free again. */
  release(pages: readonly number[]): void {
    for (const p of pages) {
      invariant(
        Number.isInteger(p) && p >= 0 && p < this.pages && this.refs[p]! > 0,
        `page ${p} released twice or never taken`,
      );
      if (--this.refs[p]! === 0) this.freePages.push(p);
    }
  }

  /** Takes a recurrent-state lane; throws `RuntimeError("kv-full")` when every lane is held. */
  takeLane(session: number): number {
    const l = this.freeLanes.pop();
    if (l === undefined)
      throw new RuntimeError(
        "kv-full",
        `all ${this.lanes} recurrent-state lanes are held: release a session or raise maxSequences`,
        { value: this.lanes, session },
      );
    return l;
  }

  /** Gives a lane back. */
  releaseLane(lane: number): void {
    invariant(
      lane >= 0 && lane < this.lanes && !this.freeLanes.includes(lane),
      `lane ${lane} released twice or never taken`,
    );
    this.freeLanes.push(lane);
  }
}
