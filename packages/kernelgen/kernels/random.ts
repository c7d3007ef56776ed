// Counter-based random numbers: Philox-4x32-10. Counter layout: element i of the stream is word (i mod 4) of
// philox(counter = (i div 4, c1, c2, c3), key = (key0, key1)); uniforms are (word >> 8) · 2^-24 in [0, 1).

import { kernel } from "@poot/kernel-dsl";
import type { Builder } from "@poot/kernel-dsl";
import { philox4x32, uniformFromBits } from "./lib/philox.js";

/** One thread per 4-word group g; grid [ceil(ceil(n/4) / WG)] (x) × rows of 65535·WG groups (y). */
function randomBody(out: "bits" | "uniform") {
  return (k: Builder): void => {
    const { buffer, uniform, spec, lid, wid, nwg, let_, if_ } = k;
    const y = buffer("out", out === "bits" ? "u32" : "f32", "write");
    const n = uniform("n", "u32");
    const key0 = uniform("key0", "u32");
    const key1 = uniform("key1", "u32");
    const c1 = uniform("c1", "u32");
    const c2 = uniform("c2", "u32");
    const c3 = uniform("c3", "u32");
    const WG = spec("WG");
    const g = let_(wid.y.mul(nwg.x).add(wid.x).mul(WG).add(lid.x), "g");
    const base = let_(g.mul(4), "base");
    // Threads past the end skip all the work; a 4-word group may straddle n (n need not be a multiple of 4).
    if_(base.lt(n), () => {
      const words = philox4x32(k, [g, c1, c2, c3], [key0, key1]);
      words.forEach((w, lane) => {
        if_(base.add(lane).lt(n), () => {
          if (out === "bits") (y as ReturnType<typeof buffer<"u32">>).set(base.add(lane), w);
          else (y as ReturnType<typeof buffer<"f32">>).set(base.add(lane), uniformFromBits(w));
        });
      });
    });
  };
}

const opts = { workgroupSize: [{ spec: "WG" }, 1, 1] as const, specs: { WG: 64 } };

/** Raw Philox-4x32-10 words: out[i] (u32). Uniforms n, key0, key1, c1, c2, c3. */
export const philox_bits = kernel("philox_bits", opts, randomBody("bits"));
/** Uniform f32 in [0, 1): out[i] = (word_i >> 8) · 2^-24. Same launch as philox_bits. */
export const philox_uniform = kernel("philox_uniform", opts, randomBody("uniform"));
