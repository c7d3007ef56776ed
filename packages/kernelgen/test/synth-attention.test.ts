// The attention generator (decode, prefill and chunked prefill; GQA; causal and sliding-window masks; soft-cap;
// token- and head-major layouts; batches; bf16/f16 queries, caches and outputs) in the interpreter against graph-ir
// primitives in float64.

import { Builder, evaluate } from "@poot/graph-ir";
import { describe, expect, it } from "vitest";
import { printKernel } from "@poot/kernel-dsl";
import { attentionLanes, cpuSynthCaps, synthesizeAttention } from "@poot/kernelgen";
import type { SynthCaps } from "@poot/kernelgen";
import { expectClose, poisoned, randF32, rng, run } from "./helpers.js";
import { CAPS, check, reference, type Case } from "./attention-helpers.js";

describe("synthesized attention", () => {
  // On the CPU caps the 14 live keys go as three blocks of 4 (decision 2306) and two single keys, each through the table.
  for (const [label, caps] of [
    ["lanes", CAPS],
    ["cpu", cpuSynthCaps()],
  ] as const)
    it(`paged KV (${label}): two sequences read their keys through scrambled page tables of one shared pool`, () => {
      const r = rng(11);
      const c: Case = { batch: 2, queries: 1, heads: 4, kvHeads: 2, headDim: 8, keys: 16, mask: "causal", pos0: 13 };
      const ps = 4,
        rows = 12 * ps,
        D = 8,
        Hkv = 2;
      const table = Int32Array.from([7, 2, 10, 5, 1, 11, 4, 8]);
      const q = randF32(r, 2 * 4 * D, 2);
      const poolK = randF32(r, rows * Hkv * D),
        poolV = randF32(r, rows * Hkv * D);
      // The reference reads contiguous token-major caches [B, S, Hkv, D] copied out of the pool page by page.
      const gather = (pool: Float32Array) => {
        const out = new Float32Array(2 * 16 * Hkv * D);
        for (let b = 0; b < 2; b++)
          for (let j = 0; j < 16; j++) {
            const row = table[b * 4 + Math.floor(j / ps)]! * ps + (j % ps);
            out.set(pool.subarray(row * Hkv * D, (row + 1) * Hkv * D), (b * 16 + j) * Hkv * D);
          }
        return out;
      };
      const scale = 1 / Math.sqrt(D);
      const s = synthesizeAttention(
        {
          ...c,
          name: "attn",
          scale,
          paged: { pageSize: ps },
          strides: { k: [0, D, Hkv * D, 1], v: [0, D, Hkv * D, 1] },
        },
        caps,
      );
      const out = poisoned(s.kernel, "out", 2 * 4 * D);
      run(s.kernel, {
        grid: [...s.grid],
        buffers: { q, k: poolK, v: poolV, out, limit: Int32Array.from([13, 13]), pages: table },
      });
      expectClose(out as Float32Array, reference(c, q, gather(poolK), gather(poolV), scale), 1, 1e-5);
      expect(() => synthesizeAttention({ ...c, name: "attn", scale, paged: { pageSize: 5 } }, CAPS)).toThrow(
        /pageSize 5/,
      );
    });

  it("decode: one query at position 22 of a 40-key cache, GQA 4:2, token-major", () => {
    check({ queries: 1, heads: 4, kvHeads: 2, headDim: 8, keys: 40, mask: "causal", pos0: 22 }, CAPS, 1);
  });

  it("cpu caps (serial threads): one lane per (query, head) walks every key; decode and sliding prefill", () => {
    const cpu = cpuSynthCaps();
    expect(
      synthesizeAttention(
        { name: "a", queries: 1, heads: 4, kvHeads: 2, headDim: 8, keys: 40, scale: 1, mask: "causal" },
        cpu,
      ).lanes,
    ).toBe(1);
    check({ queries: 1, heads: 4, kvHeads: 2, headDim: 8, keys: 40, mask: "causal", pos0: 22 }, cpu, 7);
    check(
      {
        queries: 3,
        heads: 2,
        kvHeads: 2,
        headDim: 6,
        valueDim: 5,
        keys: 16,
        mask: "sliding",
        window: 4,
        softCap: 0.7,
        pos0: 7,
      },
      cpu,
      8,
    );
  });

  describe("cpu caps with SIMD loads: vec4 q·k and p·v over load4 (decision 0954)", () => {
    const cpu = cpuSynthCaps();
    const usesLoad4 = (c: Omit<Case, "pos0">, caps: SynthCaps): boolean =>
      printKernel(synthesizeAttention({ ...c, name: "a", scale: 1 }, caps).kernel).includes("+0..3 as vec4<f32>");
    it("decode at Llama-3.2-1B head dims (64), GQA 4:1, f32 / bf16 / f16 caches, live lengths 1, 17, 40", () => {
      const c = { queries: 1, heads: 4, kvHeads: 1, headDim: 64, keys: 40, mask: "causal" } as const;
      expect(usesLoad4(c, cpu)).toBe(true);
      [0, 16, 39].forEach((pos0, i) => check({ ...c, pos0 }, cpu, 30 + i));
      check({ ...c, pos0: 25, kvDtype: "bf16", qDtype: "bf16" }, cpu, 33);
      check({ ...c, pos0: 25, kvDtype: "f16", kvLayout: "hsd", outDtype: "f16" }, cpu, 34);
    });
    it("prefill takes the keys in blocks of 4 (decision 2306): causal over 13 queries at 64-wide heads, GQA 4:1", () => {
      const c = { queries: 13, heads: 8, kvHeads: 2, headDim: 64, keys: 24, mask: "causal" } as const;
      const text = printKernel(synthesizeAttention({ ...c, name: "a", scale: 1 }, cpu).kernel);
      expect(text).toContain("jb");
      // Live lengths 8..20: whole blocks only (8, 12, 16, 20) and blocks with a tail of 1, 2 and 3 keys.
      check({ ...c, pos0: 7 }, cpu, 40);
      check({ ...c, pos0: 3, kvLayout: "hsd", kvDtype: "bf16" }, cpu, 41);
      // A mask tensor keeps the key-by-key loop (a dropped key must be skipped).
      const masked = { ...c, mask: "bool", maskTensor: { dtype: "u8", strides: [0, 0, 24, 1] } } as const;
      expect(printKernel(synthesizeAttention({ ...masked, name: "a", scale: 1 }, cpu).kernel)).not.toContain("jb");
    });
    it("head dims of 4 and 12 (fewer quads than partial sums), value dim ≠ head dim, sliding prefill with soft-cap", () => {
      check(
        {
          queries: 3,
          heads: 2,
          kvHeads: 1,
          headDim: 12,
          valueDim: 4,
          keys: 16,
          mask: "sliding",
          window: 5,
          softCap: 0.7,
          pos0: 9,
        },
        cpu,
        35,
      );
      check({ queries: 2, heads: 1, kvHeads: 1, headDim: 4, keys: 3, mask: "none", pos0: 0 }, cpu, 36);
    });
    it("flash-decode splits and batch-major strides keep the SIMD row; dims or strides off 4 keep the scalar loop", () => {
      check({ queries: 1, heads: 4, kvHeads: 2, headDim: 16, keys: 40, mask: "causal", pos0: 30, splits: 3 }, cpu, 37);
      check(
        {
          batch: 2,
          queries: 2,
          heads: 2,
          kvHeads: 2,
          headDim: 8,
          keys: 9,
          mask: "causal",
          kvLayout: "hsd",
          pos0: 5,
          ragged: [0, 2],
        },
        cpu,
        38,
      );
      expect(usesLoad4({ queries: 1, heads: 2, kvHeads: 2, headDim: 6, keys: 8, mask: "causal" }, cpu)).toBe(false);
      expect(
        usesLoad4({ queries: 1, heads: 2, kvHeads: 2, headDim: 8, valueDim: 6, keys: 8, mask: "causal" }, cpu),
      ).toBe(false);
      expect(
        usesLoad4(
          { queries: 1, heads: 2, kvHeads: 2, headDim: 8, keys: 8, mask: "causal", strides: { k: [0, 1, 16, 2] } },
          cpu,
        ),
      ).toBe(false);
      expect(
        usesLoad4(
          { queries: 1, heads: 2, kvHeads: 2, headDim: 8, keys: 8, mask: "causal" },
          { ...cpu, simdLoads: false },
        ),
      ).toBe(false);
      check({ queries: 1, heads: 2, kvHeads: 2, headDim: 8, valueDim: 6, keys: 8, mask: "causal", pos0: 6 }, cpu, 39);
    });
  });

  it("prefill: causal over 9 tokens, MQA (8 heads, 1 kv head), head-major bf16 cache", () => {
    check(
      {
        queries: 9,
        heads: 8,
        kvHeads: 1,
        headDim: 16,
        keys: 9,
        mask: "causal",
        kvLayout: "hsd",
        kvDtype: "bf16",
        pos0: 0,
      },
      CAPS,
      2,
    );
  });

  it("chunked prefill with a sliding window and soft-cap, value dim ≠ head dim", () => {
    check(
      {
        queries: 3,
        heads: 2,
        kvHeads: 2,
        headDim: 6,
        valueDim: 5,
        keys: 16,
        mask: "sliding",
        window: 4,
        softCap: 0.7,
        pos0: 7,
      },
      CAPS,
      3,
    );
  });

  it("batch of 2 with head-major q and out (graph-plan's [B, H, T, D]) via explicit strides", () => {
    const [B, H, Tq, D, S, Hkv] = [2, 2, 3, 4, 5, 1];
    check(
      {
        batch: B,
        queries: Tq,
        heads: H,
        kvHeads: Hkv,
        headDim: D,
        keys: S,
        mask: "causal",
        kvLayout: "hsd",
        pos0: 2,
        strides: {
          q: [H * Tq * D, Tq * D, D, 1],
          out: [H * Tq * D, Tq * D, D, 1],
          k: [Hkv * S * D, S * D, D, 1],
          v: [Hkv * S * D, S * D, D, 1],
        },
      },
      CAPS,
      6,
    );
  });

  it("decode and prefill with 16-bit queries, caches and outputs (bf16 q / f16 cache / bf16 out; f16 everywhere)", () => {
    check(
      {
        queries: 1,
        heads: 4,
        kvHeads: 2,
        headDim: 8,
        keys: 13,
        mask: "causal",
        pos0: 12,
        qDtype: "bf16",
        kvDtype: "f16",
        outDtype: "bf16",
      },
      CAPS,
      7,
    );
    check(
      {
        queries: 5,
        heads: 2,
        kvHeads: 1,
        headDim: 6,
        keys: 9,
        mask: "sliding",
        window: 3,
        kvLayout: "hsd",
        pos0: 4,
        qDtype: "f16",
        kvDtype: "f16",
        outDtype: "f16",
      },
      CAPS,
      8,
    );
  });

  it("unmasked attention, one key, and fewer lanes when workgroup memory is small", () => {
    check({ queries: 2, heads: 1, kvHeads: 1, headDim: 4, keys: 1, mask: "none", pos0: 0 }, CAPS, 4);
    const small: SynthCaps = { maxWorkgroup: 256, sharedBytes: 4 * (4 * (8 + 2) + 8) };
    expect(attentionLanes(8, 8, small)).toBe(4);
    const s = check({ queries: 1, heads: 2, kvHeads: 1, headDim: 8, keys: 30, mask: "causal", pos0: 29 }, small, 5);
    expect(s.lanes).toBe(4);
  });

  for (const kind of ["bool", "additive"] as const) {
    it(`${kind} mask tensor [Tq, Tk] broadcast over heads, with a fully masked query row`, () => {
      const [Tq, H, Hkv, D, S] = [3, 2, 1, 4, 6];
      const r = rng(kind === "bool" ? 41 : 42);
      const q = randF32(r, Tq * H * D, 2),
        k = randF32(r, S * Hkv * D),
        v = randF32(r, S * Hkv * D);
      // Row 0 keeps nothing (its output is defined as zeros); rows 1, 2 keep a random subset including key 1.
      const keep = Array.from({ length: Tq * S }, (_, i) => (i < S ? 0 : i % S === 1 || r() < 0.5 ? 1 : 0));
      const mask =
        kind === "bool"
          ? Uint8Array.from(keep)
          : Float32Array.from(keep, (x, i) => (x === 1 ? (i % 3) * 0.25 : -Infinity));
      const s = synthesizeAttention(
        {
          name: "am",
          queries: Tq,
          heads: H,
          kvHeads: Hkv,
          headDim: D,
          keys: S,
          scale: 0.5,
          mask: kind,
          maskTensor: { dtype: kind === "bool" ? "bool" : "f32", strides: [0, 0, S, 1] },
        },
        CAPS,
      );
      const out = poisoned(s.kernel, "out", Tq * H * D);
      run(s.kernel, { grid: [...s.grid], buffers: { q, k, v, mask, out } });
      const g = new Builder();
      const qh = g.transpose(g.const("q", "f32", [Tq, H, D]), [1, 0, 2]);
      const kh = g.repeatKv(g.transpose(g.const("k", "f32", [S, Hkv, D]), [1, 0, 2]), H / Hkv, 0);
      const vh = g.repeatKv(g.transpose(g.const("v", "f32", [S, Hkv, D]), [1, 0, 2]), H / Hkv, 0);
      const sc = g.mul(g.matmul(qh, g.transpose(kh, [0, 2, 1])), 0.5);
      const m =
        kind === "bool"
          ? g.select(g.broadcast(g.cast(g.const("mask", "u8", [Tq, S]), "bool"), [H, Tq, S]), sc, -Infinity)
          : g.add(sc, g.const("mask", "f32", [Tq, S]));
      g.output("o", g.transpose(g.matmul(g.softmax(m), vh), [1, 0, 2]));
      const want = Array.from(evaluate(g.build(), { consts: { q, k, v, mask } }).outputs.o!.data);
      // Query 0 sees no key: the reference's softmax is NaN there, the kernel writes zeros (documented).
      for (let i = 0; i < H * D; i++) want[i] = 0;
      expectClose(out as Float32Array, want, 1, 1e-5);
    });
  }

  it("refuses heads that are not a multiple of kv heads and caps that cannot hold one lane", () => {
    expect(() =>
      synthesizeAttention(
        { name: "a", queries: 1, heads: 3, kvHeads: 2, headDim: 4, keys: 4, mask: "causal", scale: 1 },
        CAPS,
      ),
    ).toThrow(expect.objectContaining({ code: "bad_shape" }));
    expect(() =>
      synthesizeAttention(
        { name: "a", queries: 1, heads: 1, kvHeads: 1, headDim: 64, keys: 4, mask: "causal", scale: 1 },
        { maxWorkgroup: 64, sharedBytes: 256 },
      ),
    ).toThrow(expect.objectContaining({ code: "exceeds_caps" }));
  });
});
