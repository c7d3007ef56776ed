// Two-stage greedy argmax over rows of logits [rows, V] (graph-plan's ArgMaxChunk / ArgMaxCombine): each chunk's
// first maximal global index, then the first maximal logit among the chunk winners. numpy order: NaN is the maximum.

import { kernel } from "@poot/kernel-dsl";
import { beats, blockArgmax } from "./lib/argmax.js";

/**
 * Stage 1. Grid [nChunks, rows]; workgroup WG (power of two). Chunk c of row r covers [c·CHUNK, min(V, (c+1)·CHUNK));
 * out[r·nChunks + c] = the global index (i32) of its first maximum. Uniforms V, CHUNK, nChunks.
 */
export const argmax_chunk = kernel(
  "argmax_chunk",
  { workgroupSize: [{ spec: "WG" }, 1, 1], specs: { WG: 64 } },
  (k) => {
    const { buffer, uniform, shared, spec, lid, wid, f32, u32, var_, let_, for_, if_, min } = k;
    const x = buffer("x", "f32", "read");
    const out = buffer("out", "i32", "write");
    const V = uniform("V", "u32");
    const CHUNK = uniform("CHUNK", "u32");
    const nChunks = uniform("nChunks", "u32");
    const WG = spec("WG");
    const sv = shared("sv", "f32", { spec: "WG" });
    const si = shared("si", "u32", { spec: "WG" });
    const tid = let_(lid.x, "tid");
    const c = let_(wid.x, "c");
    const r = let_(wid.y, "r");
    const start = let_(c.mul(CHUNK), "start");
    const end = let_(min(V, start.add(CHUNK)), "end");
    const best = var_(f32(-Infinity), "best");
    const bestIdx = var_(u32(0xffffffff), "best_i");
    for_(
      start.add(tid),
      end,
      WG,
      (i) => {
        const v = x.at(r.mul(V).add(i));
        if_(beats(v, i, best, bestIdx), () => {
          best.set(v);
          bestIdx.set(i);
        });
      },
      "i",
    );
    const w = blockArgmax(k, WG, tid, best, bestIdx, sv, si);
    // An empty chunk cannot occur (nChunks = ceil(V / CHUNK)); the start index is the reference's default anyway.
    if_(tid.eq(0).and(c.lt(nChunks)), () =>
      out.set(r.mul(nChunks).add(c), k.select(w.i.eq(0xffffffff), start, w.i).i32()),
    );
  },
);

/**
 * Stage 2. Grid [rows]; one workgroup reads x at row r's nChunks candidates (ascending global indices) and writes
 * the first maximal one to out[r] (i32). Uniforms V, nChunks.
 */
export const argmax_combine = kernel(
  "argmax_combine",
  { workgroupSize: [{ spec: "WG" }, 1, 1], specs: { WG: 64 } },
  (k) => {
    const { buffer, uniform, shared, spec, lid, wid, f32, u32, var_, let_, for_, if_, min } = k;
    const x = buffer("x", "f32", "read");
    const cand = buffer("candidates", "i32", "read");
    const out = buffer("out", "i32", "write");
    const V = uniform("V", "u32");
    const nChunks = uniform("nChunks", "u32");
    const WG = spec("WG");
    const sv = shared("sv", "f32", { spec: "WG" });
    const si = shared("si", "u32", { spec: "WG" });
    const tid = let_(lid.x, "tid");
    const r = let_(wid.x, "r");
    const best = var_(f32(-Infinity), "best");
    const bestIdx = var_(u32(0xffffffff), "best_i");
    for_(
      tid,
      nChunks,
      WG,
      (c) => {
        // Candidates come from stage 1; clamp anyway so a bad index cannot read outside the row.
        const i = let_(min(cand.at(r.mul(nChunks).add(c)).u32(), V.sub(1)), "i");
        const v = x.at(r.mul(V).add(i));
        if_(beats(v, i, best, bestIdx), () => {
          best.set(v);
          bestIdx.set(i);
        });
      },
      "c",
    );
    const w = blockArgmax(k, WG, tid, best, bestIdx, sv, si);
    if_(tid.eq(0), () => out.set(r, k.select(w.i.eq(0xffffffff), u32(0), w.i).i32()));
  },
);
