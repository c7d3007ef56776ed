// What both attention kernels share (the lane-per-key one in attention.ts, the warp-per-key one in
// attention-warp.ts): the resolved layout of a request, the buffers in binding order, the (batch, head, query,
// split) a workgroup serves with its visible key range, and the final write of the output or of a split's partial.

import type { Arr, Builder, Val } from "@poot/kernel-dsl";
import { elemOf, storeAs } from "./storage.js";
import type { StorageDType } from "./storage.js";

/** Element strides of a 4-D view [batch, head, token, dim]. */
export type Strides4 = readonly [number, number, number, number];

/** @internal A checked attention request with every default resolved. */
export interface AttentionLayout {
  readonly name: string;
  readonly batch: number;
  readonly Tq: number;
  readonly H: number;
  readonly Hkv: number;
  readonly D: number;
  readonly Dv: number;
  /** Keys in the cache. */
  readonly S: number;
  readonly qs4: Strides4;
  readonly ks4: Strides4;
  readonly vs4: Strides4;
  readonly os4: Strides4;
  readonly ls3: readonly [number, number, number];
  readonly mask: "none" | "causal" | "sliding" | "bool" | "additive";
  readonly window?: number;
  readonly scale: number;
  readonly softCap?: number;
  readonly maskTensor?: { readonly dtype: StorageDType; readonly strides: Strides4 };
  /** Page size of a paged pool, else undefined. */
  readonly pageSize?: number;
  readonly splits: number;
  readonly minSplit: number;
  /** batch · H · Tq. */
  readonly rows: number;
  readonly qDtype: StorageDType;
  readonly kvDtype: StorageDType;
  readonly outDtype: StorageDType;
}

/** @internal The kernel's buffers. */
export interface AttentionIo {
  readonly q: Arr<"f32">;
  readonly K: Arr<"f32">;
  readonly V: Arr<"f32">;
  readonly limit?: Arr<"i32">;
  readonly mask?: Arr<"f32">;
  readonly pages?: Arr<"i32">;
  readonly out?: Arr<"f32">;
  readonly part?: Arr<"f32">;
}

/** @internal Declares q, k, v, limit (causal/sliding) or mask (bool/additive), pages (paged), then out or part. */
export function declareAttentionIo(b: Builder, L: AttentionLayout): AttentionIo {
  const masked = L.mask === "causal" || L.mask === "sliding";
  return {
    q: b.buffer("q", elemOf(L.qDtype), "read") as Arr<"f32">,
    K: b.buffer("k", elemOf(L.kvDtype), "read") as Arr<"f32">,
    V: b.buffer("v", elemOf(L.kvDtype), "read") as Arr<"f32">,
    ...(masked ? { limit: b.buffer("limit", "i32", "read") } : {}),
    ...(L.maskTensor === undefined ? {} : { mask: b.buffer("mask", elemOf(L.maskTensor.dtype), "read") as Arr<"f32"> }),
    ...(L.pageSize === undefined ? {} : { pages: b.buffer("pages", "i32", "read") }),
    ...(L.splits === 1
      ? { out: b.buffer("out", elemOf(L.outDtype), "write") as Arr<"f32"> }
      : { part: b.buffer("part", "f32", "write") as Arr<"f32"> }),
  };
}

/** @internal The workgroup's (batch, head, query, split) and its visible keys [lo, hi). */
export interface AttentionRow {
  readonly wgId: Val<"u32">;
  readonly t: Val<"u32">;
  readonly h: Val<"u32">;
  readonly bb: Val<"u32">;
  readonly kvh: Val<"u32">;
  readonly lo: Val<"u32">;
  readonly hi: Val<"u32">;
  /** Element index of (head, token) under strides `s4` for this batch. */
  at(s4: Strides4, head: Val<"u32">, tok: Val<"u32">): Val<"u32">;
  /** The k/v token row of key `j` (through the page table when paged). */
  tokenRow(j: Val<"u32">): Val<"u32">;
}

/**
 * @internal Returns past the last workgroup, then finds the workgroup's row and its visible keys: one contiguous
 * range (no per-key mask test in the loop), cut to this workgroup's slice when split.
 */
export function attentionRow(b: Builder, L: AttentionLayout, io: AttentionIo): AttentionRow {
  const { let_, if_, wid, nwg, i32, u32, max, min, return_ } = b;
  const wgId = let_(wid.y.mul(nwg.x).add(wid.x), "wg");
  if_(wgId.ge(L.rows * L.splits), () => return_());
  const rowId = L.splits === 1 ? wgId : let_(wgId.div(L.splits), "row_id");
  const t = let_(rowId.rem(L.Tq), "t");
  const h = let_(rowId.div(L.Tq).rem(L.H), "h");
  const bb = let_(rowId.div(L.Tq * L.H), "bb");
  const kvh = let_(h.div(L.H / L.Hkv), "kvh");
  const at = (s4: Strides4, head: Val<"u32">, tok: Val<"u32">): Val<"u32"> =>
    let_(bb.mul(s4[0]).add(head.mul(s4[1])).add(tok.mul(s4[2])), "row");
  let lo: Val<"u32"> = u32(0);
  let hi: Val<"u32"> = u32(L.S);
  if (io.limit !== undefined) {
    const lim = let_(io.limit.at(bb.mul(L.ls3[0]).add(h.mul(L.ls3[1])).add(t.mul(L.ls3[2]))), "limit");
    hi = let_(max(min(lim.add(1), i32(L.S)), i32(0)).u32(), "hi");
    if (L.mask === "sliding") lo = let_(max(lim.sub((L.window as number) - 1), i32(0)).u32(), "lo");
  }
  if (L.splits > 1) {
    // This workgroup's slice of the live range: ceil(len / splits) keys, at least minSplit; trailing splits of a
    // short range are empty (they write an empty partial).
    const sp = let_(wgId.rem(L.splits), "split");
    const hiC = let_(max(hi, lo), "hi_c");
    const chunk = let_(
      max(
        hiC
          .sub(lo)
          .add(L.splits - 1)
          .div(L.splits),
        u32(L.minSplit),
      ),
      "chunk",
    );
    const sLo = let_(min(lo.add(sp.mul(chunk)), hiC), "s_lo");
    hi = let_(min(sLo.add(chunk), hiC), "s_hi");
    lo = sLo;
  }
  // Paged: key j lives in pool row pages[b, j / pageSize] · pageSize + j % pageSize.
  const ps = L.pageSize;
  const pages = io.pages;
  const tokenRow = (j: Val<"u32">): Val<"u32"> =>
    pages === undefined || ps === undefined
      ? j
      : let_(
          pages
            .at(bb.mul(L.S / ps).add(j.div(ps)))
            .u32()
            .mul(ps)
            .add(j.rem(ps)),
          "prow",
        );
  return { wgId, t, h, bb, kvh, lo, hi, at, tokenRow };
}

/**
 * @internal Writes the merged result: `out` = num(d) / den (zeros for a query with no visible key), or, when split,
 * the unnormalized partial at [row, split, ·] = wgId · (Dv + 2): max, sum, acc (an empty slice writes (-inf, 0, 0)).
 * Threads `tid` = 0..threads-1 each take output elements tid, tid + threads, ...
 */
export function writeAttention(
  b: Builder,
  L: AttentionLayout,
  io: AttentionIo,
  r: AttentionRow,
  M: Val<"f32">,
  den: Val<"f32">,
  tid: Val<"u32">,
  threads: number,
  num: (d: Val<"u32">) => Val<"f32">,
): void {
  const { let_, for_, if_, f32, select } = b;
  if (io.part !== undefined) {
    const part = io.part;
    const live = let_(M.gt(-Infinity), "live");
    const pRow = let_(r.wgId.mul(L.Dv + 2), "p_row");
    if_(tid.eq(0), () => {
      part.set(pRow, M);
      part.set(pRow.add(1), select(live, den, f32(0)));
    });
    for_(tid, L.Dv, threads, (d) => part.set(pRow.add(2).add(d), select(live, num(d), f32(0))), "d");
    return;
  }
  const out = io.out as Arr<"f32">;
  const oRow = r.at(L.os4, r.h, r.t);
  for_(
    tid,
    L.Dv,
    threads,
    (d) => {
      // A query with no visible key gets zeros (the graph's softmax over nothing would be NaN).
      const o = let_(select(den.gt(0), num(d).div(den), f32(0)), "o");
      storeAs(b, out, L.outDtype, oRow.add(d.mul(L.os4[3])), o);
    },
    "d",
  );
}
