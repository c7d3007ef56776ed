// The device side of greedy decoding (decision 2201): one workgroup takes the argmax of a logits row and writes the
// next step's inputs (token id, position, KV slot from the page table) and the id into a ring the host reads in
// batches, so consecutive decode steps need no host round trip. Written in the kernel DSL, so it is no one device's:
// it runs under the kernel-dsl interpreter (tested against a float64 argmax); CUDA's greedy loop lowers it to PTX.

import { kernel, type Builder, type Val } from "@poot/kernel-dsl";

/** Threads of the greedy-next workgroup (one workgroup per step). */
export const GREEDY_WG = 1024;
/** 16-byte loads each thread issues before comparing (more loads in flight on a 0.5 MB row). */
const UNROLL = 4;
/** "No index yet": loses every tie, and marks a row with no logit above -inf. */
const NONE = 0xffffffff;

/** Keeps (v, i) in (best, at) when v is larger, or equal at a lower index. NaN never wins (its compares are false). */
function better(k: Builder, v: Val<"f32">, i: Val<"u32">, best: Val<"f32">, at: Val<"u32">): Val<"bool"> {
  return k.let_(v.gt(best).or(v.eq(best).and(i.lt(at))), "better");
}

/**
 * `greedy_next`: one workgroup of {@link GREEDY_WG} threads.
 *
 * Buffers: `logits4` (vec4<f32>) and `logits` (f32), the same memory: the row at element `offset` (a multiple of 4),
 * `V` long; `ids`, `pos`, `slot_map` i32 [1]
 * (the decode program's slots, written), `page_table` i32 (the sequence's pages, read), `loop` i32 [2] (position
 * of the token just run, steps taken; read and advanced), `ring` i32 [`ring_size`] (ids by step number).
 *
 * Writes `ring[step % ring_size]` = the argmax (the lowest index among equal maxima; NaN never chosen; -1 when no
 * logit is above -inf), `ids[0]` = that id (0 for -1, so the next step stays in bounds), `pos[0]` = position + 1,
 * `slot_map[0]` = `page_table[(pos + 1) / page_size] * page_size + (pos + 1) % page_size` (the page index clamped to
 * `pages - 1`), and advances `loop`.
 */
export const greedyNext = kernel("greedy_next", { workgroupSize: [GREEDY_WG, 1, 1] }, (k) => {
  const { buffer, uniform, lid, u32, i32, f32, var_, let_, if_, for_, barrier, shared, select, shuffleXor } = k;
  const { subgroupId, subgroupLane, subgroupSize, min } = k;
  // The row twice: as 16-byte words for the body, as f32 for the tail (the same memory bound to both).
  const logits4 = buffer("logits4", "vec4<f32>", "read");
  const logits = buffer("logits", "f32", "read");
  const ids = buffer("ids", "i32", "write");
  const pos = buffer("pos", "i32", "write");
  const slotMap = buffer("slot_map", "i32", "write");
  const pageTable = buffer("page_table", "i32", "read");
  const loop = buffer("loop", "i32", "read_write");
  const ring = buffer("ring", "i32", "write");
  const V = uniform("V", "u32");
  const offset = uniform("offset", "u32");
  const pageSize = uniform("page_size", "u32");
  const pages = uniform("pages", "u32");
  const ringSize = uniform("ring_size", "u32");

  const t = lid.x;
  const best = var_(f32(Number.NEGATIVE_INFINITY), "best");
  const at = var_(u32(NONE), "at");
  const consider = (v: Val<"f32">, i: Val<"u32">) => {
    // A thread visits its indices in increasing order, so a strict > keeps the lowest among its equal maxima.
    const take = let_(v.gt(best), "take");
    best.set(select(take, v, best));
    at.set(select(take, i, at));
  };
  const V4 = let_(V.div(4), "V4");
  const offset4 = let_(offset.div(4), "offset4");
  const span = GREEDY_WG * UNROLL;
  const trips = let_(V4.div(span), "trips");
  for_(
    u32(0),
    trips,
    1,
    (trip) => {
      const c0 = let_(trip.mul(span).add(t), "c0");
      const ws = Array.from({ length: UNROLL }, (_, u) =>
        let_(logits4.at(offset4.add(c0.add(u * GREEDY_WG))), `w${u}`),
      );
      ws.forEach((w, u) => {
        const e0 = let_(c0.add(u * GREEDY_WG).mul(4), `e${u}`);
        consider(w.x, e0);
        consider(w.y, e0.add(1));
        consider(w.z, e0.add(2));
        consider(w.w, e0.add(3));
      });
    },
    "trip",
  );
  for_(
    trips.mul(span).add(t),
    V4,
    GREEDY_WG,
    (c) => {
      const w = let_(logits4.at(offset4.add(c)), "w");
      const e0 = let_(c.mul(4), "e");
      consider(w.x, e0);
      consider(w.y, e0.add(1));
      consider(w.z, e0.add(2));
      consider(w.w, e0.add(3));
    },
    "c",
  );
  for_(V4.mul(4).add(t), V, GREEDY_WG, (i) => consider(logits.at(offset.add(i)), i), "i");

  // Butterfly over the subgroup, then over the subgroups' winners through workgroup memory.
  const reduce = () => {
    for (let m = 16; m >= 1; m >>= 1) {
      const ov = let_(shuffleXor(best, m), "ov");
      const oi = let_(shuffleXor(at, m), "oi");
      const take = better(k, ov, oi, best, at);
      best.set(select(take, ov, best));
      at.set(select(take, oi, at));
    }
  };
  reduce();
  const sv = shared("sv", "f32", 32);
  const si = shared("si", "u32", 32);
  if_(subgroupLane.eq(0), () => {
    sv.set(subgroupId, best);
    si.set(subgroupId, at);
  });
  barrier();
  if_(subgroupId.eq(0), () => {
    best.set(f32(Number.NEGATIVE_INFINITY));
    at.set(u32(NONE));
    if_(subgroupLane.lt(u32(GREEDY_WG).div(subgroupSize)), () => {
      best.set(sv.at(subgroupLane));
      at.set(si.at(subgroupLane));
    });
    reduce();
    if_(subgroupLane.eq(0), () => {
      const found = let_(at.ne(NONE), "found");
      const id = let_(select(found, at.i32(), i32(-1)), "id");
      const p = let_(loop.at(0), "p");
      const step = let_(loop.at(1), "step");
      ring.set(step.u32().rem(ringSize), id);
      ids.set(0, select(found, id, i32(0)));
      const np = let_(p.add(1), "np");
      pos.set(0, np);
      const npu = let_(np.u32(), "npu");
      const page = let_(min(npu.div(pageSize), pages.sub(1)), "page");
      slotMap.set(0, pageTable.at(page).mul(pageSize.i32()).add(npu.rem(pageSize).i32()));
      loop.set(0, np);
      loop.set(1, step.add(1));
    });
  });
});

/**
 * The argmax of greedy decoding, in float64 compares: the lowest index among the largest non-NaN values of `row`; -1
 * when none is above -inf. It is `greedy_next`'s semantics (the kernel is tested against it) and the one the
 * runtime's host greedy loop uses (`@poot/runtime` re-exports it), so both loops pick the same ids.
 */
export function greedyArgmax(row: ArrayLike<number>): number {
  let at = -1;
  let best = Number.NEGATIVE_INFINITY;
  for (let i = 0; i < row.length; i++) {
    const v = row[i]!;
    if (v > best) {
      best = v;
      at = i;
    }
  }
  return at;
}
