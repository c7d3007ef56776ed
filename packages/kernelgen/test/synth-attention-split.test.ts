// The attention generator's split forms, in the interpreter against graph-ir primitives in float64
// (attention-helpers.ts): flash-decode (partials over the live KV length, then a combine dispatch) and the
// warp-per-key kernel of 32-wide subgroups (the CUDA executor's caps).

import { describe, expect, it } from "vitest";
import { attentionMinSplitKeys, attentionSplits, synthesizeAttention } from "@poot/kernelgen";
import type { SynthCaps } from "@poot/kernelgen";
import { CAPS, check } from "./attention-helpers.js";
describe("synthesized attention", () => {
  describe("flash-decode (split over the live KV length, then a combine dispatch)", () => {
    // 4 splits of at least 4 keys: live lengths 1 (three empty splits), 15 / 16 / 17 around the 4 × 4 boundary, 40.
    for (const len of [1, 15, 16, 17, 40]) {
      it(`decode, GQA 8:2, live length ${len} of 40`, () => {
        const s = check(
          {
            queries: 1,
            heads: 8,
            kvHeads: 2,
            headDim: 8,
            keys: 40,
            mask: "causal",
            pos0: len - 1,
            splits: 4,
            minSplitKeys: 4,
          },
          CAPS,
          100 + len,
        );
        expect(s.split?.partElements).toBe(8 * 4 * (8 + 2));
      });
    }

    it("ragged batch of 3 (live lengths 4, 13, 34), head-major bf16 cache", () => {
      check(
        {
          batch: 3,
          queries: 1,
          heads: 4,
          kvHeads: 1,
          headDim: 8,
          keys: 40,
          mask: "causal",
          kvLayout: "hsd",
          kvDtype: "bf16",
          pos0: 3,
          ragged: [0, 9, 30],
          splits: 5,
          minSplitKeys: 3,
        },
        CAPS,
        120,
      );
    });

    it("chunked prefill with a sliding window, soft-cap and value dim ≠ head dim", () => {
      check(
        {
          queries: 3,
          heads: 4,
          kvHeads: 2,
          headDim: 6,
          valueDim: 5,
          keys: 48,
          mask: "sliding",
          window: 11,
          softCap: 0.7,
          pos0: 30,
          splits: 3,
          minSplitKeys: 2,
        },
        CAPS,
        121,
      );
    });

    it("unmasked attention over the whole cache with more splits than keys per split", () => {
      check(
        { queries: 2, heads: 2, kvHeads: 2, headDim: 4, keys: 9, mask: "none", pos0: 0, splits: 7, minSplitKeys: 1 },
        CAPS,
        122,
      );
    });

    it("attentionSplits fills an idle device twice over, only with long enough caches", () => {
      expect(attentionSplits(32, 4096, 132)).toBe(9); // Llama-3.2-1B decode on an H200
      expect(attentionSplits(32, 256, 132)).toBe(4); // capped by 64-key slices
      expect(attentionSplits(32, 100, 132)).toBe(1);
      expect(attentionSplits(264, 4096, 132)).toBe(1); // rows already fill the device
      expect(attentionSplits(1, 1 << 20, 1000)).toBe(32);
    });

    it("refuses a bad split count", () => {
      expect(() =>
        synthesizeAttention(
          { name: "a", queries: 1, heads: 1, kvHeads: 1, headDim: 4, keys: 4, mask: "causal", scale: 1, splits: 0 },
          CAPS,
        ),
      ).toThrow(expect.objectContaining({ code: "bad_param" }));
    });
  });

  describe("warp per key (32-wide subgroups with splitAttention: the CUDA executor's caps)", () => {
    const WARP_CAPS: SynthCaps = {
      maxWorkgroup: 1024,
      subgroupSize: 32,
      sharedBytes: 49152,
      computeUnits: 132,
      splitAttention: true,
    };
    it("decode at Llama-3.2-1B head dims (64), GQA 4:1, token-major f32 cache, live lengths across the warps' trips", () => {
      for (const pos0 of [0, 5, 16, 37]) {
        const s = check(
          { queries: 1, heads: 4, kvHeads: 1, headDim: 64, keys: 40, mask: "causal", pos0 },
          WARP_CAPS,
          300 + pos0,
        );
        expect(s.lanes).toBe(128);
        expect(s.kernel.shared.map((x) => x.name)).not.toContain("qs");
      }
    });

    it("head and value dims that are not multiples of 32 (lanes past the row), sliding window, soft-cap, chunked prefill", () => {
      check(
        {
          queries: 3,
          heads: 4,
          kvHeads: 2,
          headDim: 40,
          valueDim: 20,
          keys: 48,
          mask: "sliding",
          window: 11,
          softCap: 0.7,
          pos0: 30,
        },
        WARP_CAPS,
        310,
      );
    });

    it("flash-decode splits of 16 keys (4 warps x 4 keys), live lengths 1, 16, 17, 40; ragged bf16 batch", () => {
      expect(attentionMinSplitKeys(64, 64, WARP_CAPS)).toBe(16);
      expect(attentionMinSplitKeys(64, 64, WARP_CAPS, true)).toBe(128); // a mask tensor keeps the lane-per-key kernel
      for (const len of [1, 16, 17, 40])
        check(
          { queries: 1, heads: 8, kvHeads: 2, headDim: 32, keys: 40, mask: "causal", pos0: len - 1, splits: 3 },
          WARP_CAPS,
          320 + len,
        );
      check(
        {
          batch: 3,
          queries: 1,
          heads: 4,
          kvHeads: 1,
          headDim: 32,
          keys: 40,
          mask: "causal",
          kvLayout: "hsd",
          kvDtype: "bf16",
          qDtype: "bf16",
          outDtype: "bf16",
          pos0: 3,
          ragged: [0, 9, 30],
          splits: 5,
          minSplitKeys: 3,
        },
        WARP_CAPS,
        330,
      );
    });

    it("unmasked attention with f16 caches; a bool mask tensor takes the lane-per-key kernel", () => {
      check(
        { queries: 2, heads: 2, kvHeads: 2, headDim: 32, keys: 9, mask: "none", kvDtype: "f16", pos0: 0 },
        WARP_CAPS,
        340,
      );
      const s = synthesizeAttention(
        {
          name: "a",
          queries: 1,
          heads: 2,
          kvHeads: 2,
          headDim: 32,
          keys: 9,
          scale: 1,
          mask: "bool",
          maskTensor: { dtype: "bool", strides: [0, 0, 9, 1] },
        },
        WARP_CAPS,
      );
      expect(s.kernel.shared.map((x) => x.name)).toContain("qs"); // the lane-per-key kernel's query in shared memory
    });
  });
});
