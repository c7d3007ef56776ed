// Packed bf16 -> f32 conversion: bf16 pairs in u32 words (element 2w in the low half) widened exactly to f32.

import { kernel } from "@poot/kernel-dsl";

/** out[i] = bf16 element i of `in` (u32 words). Uniform n (elements; may be odd). One thread per word. */
export const convert_bf16x2_f32 = kernel(
  "convert_bf16x2_f32",
  { workgroupSize: [{ spec: "WG" }, 1, 1], specs: { WG: 64 } },
  (k) => {
    const { buffer, uniform, spec, wid, nwg, lid, let_, if_, unpack } = k;
    const src = buffer("in", "u32", "read");
    const out = buffer("out", "f32", "write");
    const n = uniform("n", "u32");
    const w = let_(wid.y.mul(nwg.x).add(wid.x).mul(spec("WG")).add(lid.x), "w");
    const i = let_(w.mul(2), "i");
    if_(i.lt(n), () => {
      const pair = let_(unpack("bf16x2", src.at(w)), "pair");
      out.set(i, pair.x);
      if_(i.add(1).lt(n), () => out.set(i.add(1), pair.y));
    });
  },
);
