// The page pool's bookkeeping: pages are handed out once, reservations hold pages back from others, a full
// pool refuses with kv-full and takes nothing, double releases are caught.
import { describe, expect, it } from "vitest";
import { KvPool } from "./kv-pool.js";

describe("KvPool", () => {
  it("takes distinct pages, reserves ahead, refuses past capacity and counts everything back", () => {
    const pool = new KvPool(16, 6, 2);
    expect(pool.pagesFor(1)).toBe(1);
    expect(pool.pagesFor(16)).toBe(1);
    expect(pool.pagesFor(17)).toBe(2);
    const a = pool.take(2, 0, 1);
    expect(pool.reserve(3)).toBe(true);
    expect(pool.stats).toMatchObject({ pagesInUse: 2, pagesReserved: 3, pagesFree: 1 });
    // Only one unpromised page is left: two more for another session do not fit, and nothing is taken.
    expect(() => pool.take(2, 0, 2)).toThrow(expect.objectContaining({ code: "kv-full" }));
    expect(pool.stats.pagesInUse).toBe(2);
    expect(pool.reserve(2)).toBe(false);
    // The reservation's owner takes its promised pages plus the last free one.
    const b = pool.take(4, 3, 3);
    expect(new Set([...a, ...b]).size).toBe(6);
    expect(pool.stats).toMatchObject({ pagesInUse: 6, pagesReserved: 0, pagesFree: 0 });
    pool.release(a);
    pool.release(b);
    expect(() => pool.release([a[0]!])).toThrow(/released twice/);
    expect(pool.stats).toMatchObject({ pagesInUse: 0, pagesFree: 6 });
    const l0 = pool.takeLane(1),
      l1 = pool.takeLane(2);
    expect(l0).not.toBe(l1);
    expect(() => pool.takeLane(3)).toThrow(expect.objectContaining({ code: "kv-full" }));
    pool.releaseLane(l0);
    expect(pool.stats.lanesInUse).toBe(1);
  });
});
