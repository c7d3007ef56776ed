// Two-stage greedy argmax over rows of logits [B, V]: per-chunk (value, index) partials, then a combine.
// numpy order: the first maximal index wins, NaN counts as the maximum; the result is an i32 token id.

import { kernel } from "@poot/kernel-dsl";
import { beats, blockArgmax } from "./lib/argmax.js";

/**
 * Stage 1. Grid [nChunks, B]; workgroup WG (power of two). Chunk c of row b covers [c·CHUNK, min(V, (c+1)·CHUNK)).
 * Writes pv[b·nChunks + c] (f32) and pi[b·nChunks + c] (u32 index into the row).
 */
export const argmax_chunk = kernel("argmax_chunk", { workgroupSize: [{ spec: "WG" }, 1, 1], specs: { WG: 64 } }, (k) => {
  const { buffer, uniform, shared, spec, lid, wid, f32, u32, var_, let_, for_, if_, min } = k;
  const x = buffer("x", "f32", "read");
  const pv = buffer("pv", "f32", "write");
  const pi = buffer("pi", "u32", "write");
  const V = uniform("V", "u32");
  const CHUNK = uniform("CHUNK", "u32");
  const nChunks = uniform("nChunks", "u32");
  const WG = spec("WG");
  const sv = shared("sv", "f32", { spec: "WG" });
  const si = shared("si", "u32", { spec: "WG" });
  const tid = let_(lid.x, "tid");
  const c = let_(wid.x, "c");
  const b = let_(wid.y, "b");
  const start = let_(c.mul(CHUNK), "start");
  const end = let_(min(V, start.add(CHUNK)), "end");
  const best = var_(f32(-Infinity), "best");
  const bestIdx = var_(u32(0xffffffff), "best_i");
  for_(start.add(tid), end, WG, (i) => {
    const v = x.at(b.mul(V).add(i));
    if_(beats(v, i, best, bestIdx), () => {
      best.set(v);
      bestIdx.set(i);
    });
  }, "i");
  const w = blockArgmax(k, WG, tid, best, bestIdx, sv, si);
  if_(tid.eq(0).and(c.lt(nChunks)), () => {
    pv.set(b.mul(nChunks).add(c), w.v);
    pi.set(b.mul(nChunks).add(c), w.i);
  });
});

/** Stage 2. Grid [B]; one workgroup reduces row b's nChunks partials and writes out[b] (i32). */
export const argmax_combine = kernel("argmax_combine", { workgroupSize: [{ spec: "WG" }, 1, 1], specs: { WG: 64 } }, (k) => {
  const { buffer, uniform, shared, spec, lid, wid, f32, u32, var_, let_, for_, if_ } = k;
  const pv = buffer("pv", "f32", "read");
  const pi = buffer("pi", "u32", "read");
  const out = buffer("out", "i32", "write");
  const nChunks = uniform("nChunks", "u32");
  const WG = spec("WG");
  const sv = shared("sv", "f32", { spec: "WG" });
  const si = shared("si", "u32", { spec: "WG" });
  const tid = let_(lid.x, "tid");
  const b = let_(wid.x, "b");
  const best = var_(f32(-Infinity), "best");
  const bestIdx = var_(u32(0xffffffff), "best_i");
  for_(tid, nChunks, WG, (c) => {
    const v = pv.at(b.mul(nChunks).add(c));
    const i = pi.at(b.mul(nChunks).add(c));
    if_(beats(v, i, best, bestIdx), () => {
      best.set(v);
      bestIdx.set(i);
    });
  }, "c");
  const w = blockArgmax(k, WG, tid, best, bestIdx, sv, si);
  if_(tid.eq(0), () => out.set(b, w.i.i32()));
});
