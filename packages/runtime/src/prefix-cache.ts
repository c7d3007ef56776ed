// The prefix cache: KV pages of finished prompts kept in a radix tree over token ids, one page-sized chunk of ids
// per edge, so a later prompt that starts with the same tokens adopts those pages instead of computing them.
// Pages are reference-counted in the KvPool (the cache holds one reference, each session adopting a page
// another); pages only the cache holds are evicted least recently used first, leaves before their parents.
import type { KvPool } from "./kv-pool.js";

interface Node {
  readonly page: number;
  readonly parent: Node | null;
  readonly key: string;
  readonly children: Map<string, Node>;
  lastUsed: number;
}

/** Counters of a {@link PrefixCache}. */
export interface PrefixCacheStats {
  /** Sessions that adopted at least one cached page. */
  readonly hits: number;
  /** Prompt tokens whose keys and values came from the cache. */
  readonly hitTokens: number;
  /** Pages given back to the pool by eviction. */
  readonly evictions: number;
  /** Pages the cache holds now. */
  readonly pages: number;
}

/** A radix tree of page-sized token chunks over pages of one {@link KvPool}. */
export class PrefixCache {
  private readonly root: Node = { page: -1, parent: null, key: "", children: new Map(), lastUsed: 0 };
  private readonly nodes = new Set<Node>();
  private clock = 0;
  private hits = 0;
  private hitTokens = 0;
  private evictions = 0;

  /** @param pool - the page pool the cached pages belong to. */
  constructor(private readonly pool: KvPool) {}

  private chunk(ids: readonly number[], i: number): string {
    const ps = this.pool.pageSize;
    return ids.slice(i * ps, (i + 1) * ps).join(",");
  }

  /** The cached pages of the longest prefix of `ids` made of whole pages, at most `maxPages` (marked used unless `peek`). */
  match(ids: readonly number[], maxPages: number, peek = false): number[] {
    const out: number[] = [];
    let node = this.root;
    const now = ++this.clock;
    for (let i = 0; i < maxPages; i++) {
      const next = node.children.get(this.chunk(ids, i));
      if (next === undefined) break;
      if (!peek) next.lastUsed = now;
      out.push(next.page);
      node = next;
    }
    if (!peek && out.length > 0) {
      this.hits++;
      this.hitTokens += out.length * this.pool.pageSize;
    }
    return out;
  }

  /**
   * Keeps the whole pages of `ids` held in `pages` (page i holds ids[i·pageSize ..]): each chunk not cached yet
   * gets its page retained; chunks already cached keep their own page.
   */
  insert(ids: readonly number[], pages: readonly number[]): void {
    const n = Math.min(pages.length, Math.floor(ids.length / this.pool.pageSize));
    let node = this.root;
    const now = ++this.clock;
    for (let i = 0; i < n; i++) {
      const key = this.chunk(ids, i);
      let next = node.children.get(key);
      if (next === undefined) {
        this.pool.retain([pages[i]!]);
        next = { page: pages[i]!, parent: node, key, children: new Map(), lastUsed: now };
        node.children.set(key, next);
        this.nodes.add(next);
      } else next.lastUsed = now;
      node = next;
    }
  }

  /** Pages eviction could free now: those only the cache holds (a page a session holds keeps its ancestors held too). */
  get evictable(): number {
    let n = 0;
    for (const node of this.nodes) if (this.pool.holders(node.page) === 1) n++;
    return n;
  }

  /** Frees up to `n` pages only the cache holds, least recently used leaves first; returns how many it freed. */
  evict(n: number): number {
    let freed = 0;
    while (freed < n) {
      let victim: Node | null = null;
      for (const node of this.nodes)
        if (
          node.children.size === 0 &&
          this.pool.holders(node.page) === 1 &&
          (victim === null || node.lastUsed < victim.lastUsed)
        )
          victim = node;
      if (victim === null) break;
      victim.parent!.children.delete(victim.key);
      this.nodes.delete(victim);
      this.pool.release([victim.page]);
      this.evictions++;
      freed++;
    }
    return freed;
  }

  /** Gives every page back (the engine is closing). */
  clear(): void {
    for (const node of this.nodes) this.pool.release([node.page]);
    this.nodes.clear();
    this.root.children.clear();
  }

  /** Hits, hit tokens, evictions and pages held. */
  get stats(): PrefixCacheStats {
    return { hits: this.hits, hitTokens: this.hitTokens, evictions: this.evictions, pages: this.nodes.size };
  }
}
