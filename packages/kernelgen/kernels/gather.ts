// Packed row gathers: rows of a [V, ·] table selected by i32 ids, copied out still packed (bytes, any row
// size) or decoded to f32 (bf16 rows, GGUF Q8_0 rows). Ids are clamped into [0, V) so a bad id never reads out of bounds.

import { kernel } from "@poot/kernel-dsl";
import type { Builder } from "@poot/kernel-dsl";
import { byteAt, f16At, i8From } from "./lib/bytes.js";

const opts = { workgroupSize: [{ spec: "WG" }, 1, 1] as const, specs: { WG: 64 } };

/** Linear thread index over a 2-D grid (x fastest), so more than 65535 workgroups can be launched. */
function linearId(k: Builder) {
  const { wid, nwg, lid, spec, let_ } = k;
  return let_(wid.y.mul(nwg.x).add(wid.x).mul(spec("WG")).add(lid.x), "e");
}

/** Clamped row id of output row r. */
function rowId(
  k: Builder,
  ids: ReturnType<Builder["buffer"]>,
  r: ReturnType<Builder["u32"]>,
  V: ReturnType<Builder["u32"]>,
) {
  const { let_, min, max } = k;
  const id = ids.at(r) as unknown as ReturnType<Builder["i32"]>;
  return let_(min(max(id, k.i32(0)).u32(), V.sub(1)), "id");
}

/**
 * out bytes [R·rowBytes] = table rows ids[0..R) (each rowBytes bytes), all buffers u32 words; one thread per
 * output word, assembling its 4 bytes from whichever rows they fall in (rows need not be word aligned).
 * Uniforms R, V, rowBytes. Grid: ceil(ceil(R·rowBytes/4) / WG) threads' workgroups.
 */
export const gather_rows_packed = kernel("gather_rows_packed", opts, (k) => {
  const { buffer, uniform, u32, var_, let_, if_, for_ } = k;
  const table = buffer("table", "u32", "read");
  const ids = buffer("ids", "i32", "read");
  const out = buffer("out", "u32", "write");
  const R = uniform("R", "u32");
  const V = uniform("V", "u32");
  const rowBytes = uniform("rowBytes", "u32");
  const e = linearId(k);
  const total = let_(R.mul(rowBytes), "total");
  if_(e.mul(4).lt(total), () => {
    const word = var_(u32(0), "word");
    for_(
      u32(0),
      4,
      1,
      (j) => {
        const ob = let_(e.mul(4).add(j), "ob");
        if_(ob.lt(total), () => {
          const r = let_(ob.div(rowBytes), "r");
          const id = rowId(k, ids, r, V);
          const src = let_(id.mul(rowBytes).add(ob.sub(r.mul(rowBytes))), "src");
          word.set(word.or(byteAt(table, src).shl(j.mul(8))));
        });
      },
      "j",
    );
    out.set(e, word);
  });
});

/** out[r, j] = bf16 table[ids[r], j] widened to f32. Uniforms R, V, D. One thread per output element. */
export const gather_rows_bf16_f32 = kernel("gather_rows_bf16_f32", opts, (k) => {
  const { buffer, uniform, let_, if_ } = k;
  const table = buffer("table", "bf16", "read");
  const ids = buffer("ids", "i32", "read");
  const out = buffer("out", "f32", "write");
  const R = uniform("R", "u32");
  const V = uniform("V", "u32");
  const D = uniform("D", "u32");
  const e = linearId(k);
  if_(e.lt(R.mul(D)), () => {
    const r = let_(e.div(D), "r");
    const id = rowId(k, ids, r, V);
    out.set(e, table.at(id.mul(D).add(e.sub(r.mul(D)))));
  });
});

/**
 * out[r, j] = Q8_0 row ids[r] decoded: block = 34 bytes (f16 scale d, 32 i8 quants), x = d · q.
 * Table as u32 words (row r starts at byte r·(D/32)·34). Uniforms R, V, D (a multiple of 32).
 */
export const gather_rows_q8_0_f32 = kernel("gather_rows_q8_0_f32", opts, (k) => {
  const { buffer, uniform, let_, if_, unpack } = k;
  const table = buffer("table", "u32", "read");
  const ids = buffer("ids", "i32", "read");
  const out = buffer("out", "f32", "write");
  const R = uniform("R", "u32");
  const V = uniform("V", "u32");
  const D = uniform("D", "u32");
  const e = linearId(k);
  if_(e.lt(R.mul(D)), () => {
    const r = let_(e.div(D), "r");
    const j = let_(e.sub(r.mul(D)), "j");
    const id = rowId(k, ids, r, V);
    const blk = let_(id.mul(D.shr(5)).add(j.shr(5)).mul(34), "blk");
    const d = let_(f16At(table, blk, unpack), "d");
    const q = let_(i8From(byteAt(table, blk.add(2).add(j.and(31)))), "q");
    out.set(e, d.mul(q.f32()));
  });
});
