// The second dispatch of a flash-decode (split) attention: each split wrote its partial softmax (running max, sum and
// unnormalized output row, f32) to the transient `part`; the combine rescales them to the common max and writes `out`.

import { kernel } from "@poot/kernel-dsl";
import type { Arr, Val } from "@poot/kernel-dsl";
import { grid2d } from "../caps.js";
import type { SynthCaps, SynthKernel } from "../caps.js";
import type { Strides4 } from "./attention-common.js";
import { elemOf, storeAs } from "./storage.js";
import type { StorageDType } from "./storage.js";

/** The shape of a split attention's result: rows (batch · head · query) by splits, and where `out` is written. */
export interface CombineShape {
  readonly rows: number;
  readonly splits: number;
  readonly Tq: number;
  readonly H: number;
  readonly Dv: number;
  readonly os4: Strides4;
  readonly outDtype: StorageDType;
}

/** The flash-decode combine: one workgroup per row merges its splits' partials (f32) and writes `out`. */
export function combineKernel(name: string, c: CombineShape, caps: SynthCaps): SynthKernel {
  const { rows, splits, Tq, H, Dv, os4, outDtype } = c;
  let wg = 1;
  while (wg * 2 <= Math.min(caps.maxWorkgroup, 128) && wg < Dv) wg *= 2;
  const k = kernel(name, { workgroupSize: [wg, 1, 1] }, (b) => {
    const { let_, var_, for_, if_, wid, nwg, lid, f32, u32, exp, max, select, return_ } = b;
    const part = b.buffer("part", "f32", "read") as Arr<"f32">;
    const out = b.buffer("out", elemOf(outDtype), "write");
    const row = let_(wid.y.mul(nwg.x).add(wid.x), "row");
    if_(row.ge(rows), () => return_());
    const t = let_(row.rem(Tq), "t");
    const h = let_(row.div(Tq).rem(H), "h");
    const bb = let_(row.div(Tq * H), "bb");
    const base = let_(row.mul(splits * (Dv + 2)), "base");
    const M = var_(f32(-Infinity), "M");
    for_(u32(0), splits, 1, (i) => M.set(max(M, part.at(base.add(i.mul(Dv + 2))))), "i");
    // An empty split (max -inf) weighs 0; exp(-inf - -inf) never reaches a sum.
    const weight = (i: Val<"u32">): Val<"f32"> => {
      const mi = let_(part.at(base.add(i.mul(Dv + 2))), "mi");
      return let_(select(mi.gt(-Infinity), exp(mi.sub(M)), f32(0)), "w");
    };
    const den = var_(f32(0), "den");
    for_(u32(0), splits, 1, (i) => den.set(den.add(part.at(base.add(i.mul(Dv + 2)).add(1)).mul(weight(i)))), "i");
    const oRow = let_(bb.mul(os4[0]).add(h.mul(os4[1])).add(t.mul(os4[2])), "o_row");
    for_(
      lid.x,
      Dv,
      wg,
      (d) => {
        const num = var_(f32(0), "num");
        for_(
          u32(0),
          splits,
          1,
          (i) =>
            num.set(
              num.add(
                part
                  .at(
                    base
                      .add(i.mul(Dv + 2))
                      .add(2)
                      .add(d),
                  )
                  .mul(weight(i)),
              ),
            ),
          "i",
        );
        storeAs(b, out, outDtype, oRow.add(d.mul(os4[3])), let_(select(den.gt(0), num.div(den), f32(0)), "o"));
      },
      "d",
    );
  });
  return { kernel: k, grid: grid2d(rows, caps) };
}
