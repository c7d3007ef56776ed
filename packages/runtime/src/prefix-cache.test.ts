// The prefix cache's bookkeeping over a real KvPool: whole-page matching, reference counts (a page a session holds
// is never evicted), LRU eviction of leaves first, and every page back in the pool at the end.
import { describe, expect, test } from "vitest";
import { KvPool } from "./kv-pool.js";
import { PrefixCache } from "./prefix-cache.js";

describe("PrefixCache", () => {
  test("matches whole pages only, counts holders, evicts LRU leaves, and gives every page back", () => {
    const pool = new KvPool(4, 8, 0);
    const cache = new PrefixCache(pool);
    const a = [1, 2, 3, 4, 5, 6, 7, 8, 9];
    const pagesA = pool.take(3, 0, 1);
    cache.insert(a, pagesA); // two whole pages (9 tokens)
    pool.release(pagesA); // the session ends: the cache alone holds the two whole pages
    expect(pool.stats.pagesInUse).toBe(2);
    expect(cache.match([1, 2, 3, 4, 5, 6, 7, 8, 0, 0], 2)).toEqual(pagesA.slice(0, 2));
    expect(cache.match([1, 2, 3, 4, 9, 9, 9, 9], 2)).toEqual(pagesA.slice(0, 1));
    expect(cache.match([1, 2, 3], 2)).toEqual([]);
    // A session adopting the first page holds it: only the second (a leaf held by the cache alone) can go.
    pool.retain(pagesA.slice(0, 1));
    expect(cache.evictable).toBe(1);
    expect(cache.evict(5)).toBe(1);
    expect(cache.stats.pages).toBe(1);
    pool.release(pagesA.slice(0, 1));
    expect(cache.evict(5)).toBe(1);
    expect(pool.stats.pagesInUse).toBe(0);
    expect(cache.stats).toMatchObject({ evictions: 2, pages: 0, hits: 2, hitTokens: 12 });
  });

  test("planted: a page released more often than it was held is caught", () => {
    const pool = new KvPool(4, 2, 0);
    const p = pool.take(1, 0, 1);
    pool.release(p);
    expect(() => pool.release(p)).toThrow(/released twice/);
  });
});
