// The data-only decode recipes against this package's ggml-derived block decoders, on every packed tensor of
// the GGUF fixtures (written by ggml's own quantizers), plus a hand-built block per format.
import * as fs from "node:fs";
import * as path from "node:path";
import { decodePacked as decodeRecipe, validatePackedFormat } from "@poot/graph-ir";
import { describe, expect, test } from "vitest";
import { openGGUF } from "../gguf.js";
import { fixture, needFixture } from "@poot/testkit";
import { PACKED_GGML_TYPES, ggmlPackedFormat } from "./recipes.js";
import { QUANT_FORMATS } from "./registry.js";

// The fixture folders this file reads (in the repo's fixtures/; CI fails when one is missing).
const NO_FIXTURES = needFixture("gguf");
const FIXTURES = NO_FIXTURES === undefined ? fixture() : undefined;

describe("GGML packed recipes", () => {
  test("every recipe validates and plain float types have none", () => {
    for (const t of PACKED_GGML_TYPES) validatePackedFormat(ggmlPackedFormat(t)!);
    expect(ggmlPackedFormat("F32")).toBeNull();
    expect(ggmlPackedFormat("F16")).toBeNull();
  });

  test("Q8_0 block by hand: d = 0.5, q = -128, -120, ..", () => {
    const bytes = new Uint8Array(34);
    new DataView(bytes.buffer).setUint16(0, 0x3800, true); // f16 0.5
    for (let i = 0; i < 32; i++) bytes[2 + i] = (i * 8 - 128) & 0xff;
    const out = decodeRecipe(ggmlPackedFormat("Q8_0")!, bytes, 32);
    for (let i = 0; i < 32; i++) expect(out[i]).toBe(0.5 * (i * 8 - 128));
  });

  test("Q5_0 block by hand: fifth bit from qh, offset 16", () => {
    const bytes = new Uint8Array(22);
    const dv = new DataView(bytes.buffer);
    dv.setUint16(0, 0x4000, true); // f16 2
    dv.setUint32(2, 0xa5a5f00f, true);
    for (let j = 0; j < 16; j++) bytes[6 + j] = (j * 7 + 3) & 0xff;
    const out = decodeRecipe(ggmlPackedFormat("Q5_0")!, bytes, 32);
    for (let i = 0; i < 32; i++) {
      const byte = bytes[6 + (i % 16)]!;
      const nib = i < 16 ? byte & 15 : byte >> 4;
      const hi = (0xa5a5f00f >>> i) & 1;
      expect(out[i]).toBe(2 * ((nib | (hi << 4)) - 16));
    }
  });

  test("every GGUF block type of the issue has a recipe", () => {
    expect([...PACKED_GGML_TYPES].sort()).toEqual([
      "IQ4_NL",
      "IQ4_XS",
      "MXFP4",
      "Q2_K",
      "Q3_K",
      "Q4_0",
      "Q4_1",
      "Q4_K",
      "Q5_0",
      "Q5_1",
      "Q5_K",
      "Q6_K",
      "Q8_0",
    ]);
  });

  test("random blocks of every format decode like the ggml block decoders (seeded)", () => {
    let seed = 12345;
    const rnd = () => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) >>> 8) & 0xff;
    for (const t of PACKED_GGML_TYPES) {
      const fmt = ggmlPackedFormat(t)!,
        ref = QUANT_FORMATS[t];
      expect(fmt.blockSize).toBe(ref.blockElems);
      expect(fmt.bytesPerBlock).toBe(ref.blockBytes);
      for (let trial = 0; trial < 50; trial++) {
        const bytes = Uint8Array.from({ length: fmt.bytesPerBlock }, rnd);
        // Keep f16 scale fields finite and moderate (exponent bits cleared of the top).
        for (const f of ref.fields)
          if (f.kind === "f16") for (let k = 0; k < f.count; k++) bytes[f.offset + 2 * k + 1]! &= 0x3f;
        const want = new Float32Array(fmt.blockSize);
        ref.decodeBlock(bytes, 0, want, 0);
        const got = decodeRecipe(fmt, bytes, fmt.blockSize);
        for (let i = 0; i < fmt.blockSize; i++) expect(got[i], `${t} element ${i}`).toBe(want[i]);
      }
    }
  }, 60_000);

  // These two files hold every packed type the fixtures use (Q4_K, Q6_K; Q5_0, Q5_1, Q8_0).
  const ggufs =
    FIXTURES === undefined
      ? []
      : [fixture("gguf", "llama3-w256", "model-Q4_K_M.gguf"), fixture("gguf", "olmoe", "model-Q4_K_M.gguf")];
  test.skipIf(ggufs.length === 0)(
    "recipes decode every packed fixture tensor exactly like the ggml block decoders",
    () => {
      const seen = new Set<string>();
      for (const file of ggufs) {
        const g = openGGUF(file);
        for (const t of g.tensors()) {
          const fmt = ggmlPackedFormat(t.dtype);
          if (fmt === null) continue;
          seen.add(t.dtype);
          const n = t.shape.reduce((a, b) => a * b, 1);
          const mine = decodeRecipe(fmt, g.readSync(t.name), n);
          const ref = g.readF32Sync(t.name);
          let bad = 0;
          for (let i = 0; i < n; i++) if (mine[i] !== ref[i]) bad++;
          expect(bad, `${path.basename(file)} ${t.name} (${t.dtype})`).toBe(0);
        }
        g.close();
      }
      expect([...seen].sort()).toEqual(["Q4_K", "Q5_0", "Q5_1", "Q6_K", "Q8_0"]);
    },
    60_000,
  );
});
