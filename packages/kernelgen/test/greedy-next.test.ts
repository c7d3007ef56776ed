// greedy_next under the kernel-dsl interpreter against a float64 argmax of the same row (its PTX: backend-cuda).
import { interpret } from "@poot/kernel-dsl";
import { describe, expect, it } from "vitest";
import { greedyNext, greedyArgmax } from "../src/greedy.js";

function lcg(seed: number): () => number {
  let s = seed >>> 0;
  return () => ((s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 2 ** 32) * 2 - 1;
}

/** Runs one greedy_next step over `row` placed at element `offset`; returns every buffer it wrote. */
function step(
  row: Float32Array,
  o: { offset?: number; pos?: number; step?: number; ringSize?: number; pageSize?: number; pageTable?: number[] } = {},
) {
  const offset = o.offset ?? 0;
  const logits = new Float32Array(offset + row.length + 5).fill(1e30); // values outside the row must not be read
  logits.set(row, offset);
  const pageTable = Int32Array.from(o.pageTable ?? [7, 3, 9, 1]);
  const ringSize = o.ringSize ?? 8;
  const loop = Int32Array.of(o.pos ?? 5, o.step ?? 2);
  const ids = Int32Array.of(-7),
    pos = Int32Array.of(-7),
    slotMap = Int32Array.of(-7),
    ring = new Int32Array(ringSize).fill(-7);
  interpret(greedyNext, {
    grid: [1, 1, 1],
    buffers: { logits4: logits, logits, ids, pos, slot_map: slotMap, page_table: pageTable, loop, ring },
    uniforms: {
      V: row.length,
      offset,
      page_size: o.pageSize ?? 16,
      pages: pageTable.length,
      ring_size: ringSize,
    },
    subgroupSize: 32,
  });
  return { ids: ids[0]!, pos: pos[0]!, slotMap: slotMap[0]!, ring, loop: Array.from(loop) };
}

describe("greedy_next", () => {
  const r = lcg(11);
  // 2 full unrolled trips (2 · 1024 · 4 vec4), a partial vec4 pass and a scalar tail of 3.
  const long = 2 * 1024 * 4 * 4 + 4 * 37 + 3;
  it.each([
    ["a short row (scalar tail only)", 3],
    ["an odd row below one vec4 pass", 1021],
    ["trips, a partial vec4 pass and a tail", long],
  ])("picks the float64 argmax of %s", (_, V) => {
    for (let trial = 0; trial < 3; trial++) {
      const row = Float32Array.from({ length: V }, r);
      const got = step(row, { offset: 4 * trial });
      expect(got.ids).toBe(greedyArgmax(row));
      expect(got.ring[2]).toBe(greedyArgmax(row));
    }
  });

  it("takes the lowest index among equal maxima across threads, trips and the tail", () => {
    const row = Float32Array.from({ length: long }, () => r() * 0.5);
    for (const i of [long - 1, 40000, 17, 9000, 4096 * 4 + 1]) row[i] = 3;
    expect(step(row).ids).toBe(17);
    row[17] = 0;
    expect(step(row).ids).toBe(9000);
    row[9000] = 0;
    expect(step(row).ids).toBe(4096 * 4 + 1);
  });

  it("never picks NaN, takes +inf, and reports -1 (writing token 0) when nothing is above -inf", () => {
    const row = Float32Array.from({ length: 5000 }, r);
    row[0] = Number.NaN;
    row[1234] = Number.NaN;
    row[4999] = Number.NaN;
    expect(step(row).ids).toBe(greedyArgmax(row));
    row[3333] = Number.POSITIVE_INFINITY;
    expect(step(row).ids).toBe(3333);
    const dead = new Float32Array(300).fill(Number.NEGATIVE_INFINITY);
    dead[7] = Number.NaN;
    const got = step(dead);
    expect(greedyArgmax(dead)).toBe(-1);
    expect(got.ring[2]).toBe(-1);
    expect(got.ids).toBe(0);
  });

  it("writes the next position, its KV slot from the page table, the ring by step, and advances the loop", () => {
    const row = Float32Array.from({ length: 64 }, r);
    // Token at position 15 ran; the next is position 16: page index 1 of [7, 3, 9, 1] → slot 3 · 16 + 0.
    const a = step(row, { pos: 15, step: 9, ringSize: 4 });
    expect(a).toMatchObject({ pos: 16, slotMap: 48, loop: [16, 10] });
    expect(a.ring[9 % 4]).toBe(greedyArgmax(row));
    expect([...a.ring].filter((x) => x !== -7)).toHaveLength(1);
    // Position 37 → page 2 (9), slot 9 · 16 + 5; past the table the page index is clamped (never out of bounds).
    expect(step(row, { pos: 36 }).slotMap).toBe(9 * 16 + 5);
    expect(step(row, { pos: 200 }).slotMap).toBe(1 * 16 + (201 % 16));
  });

  it("a planted wrong tie-break is caught by the reference", () => {
    const row = new Float32Array(100).fill(0);
    row[10] = 1;
    row[90] = 1;
    const highest = (xs: Float32Array) => xs.lastIndexOf(Math.max(...xs));
    expect(highest(row)).not.toBe(step(row).ids);
    expect(greedyArgmax(row)).toBe(step(row).ids);
  });
});
