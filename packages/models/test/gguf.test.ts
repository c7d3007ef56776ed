// GGUF: self-written files round-trip (all metadata value types, row-major shapes, packed reads),
// and bad input (truncation, bad magic/version, unknown tensor type, misalignment, overlap) gives typed errors.
import { describe, expect, test } from "vitest";
import {
  GGUFCheckpoint,
  MemorySource,
  ModelError,
  QUANT_FORMATS,
  UnsupportedTensorTypeError,
  encodeGGUFHeader,
  type GGUFWriteTensor,
} from "@poot/models";

function gguf(tensors: GGUFWriteTensor[], fill: (name: string, bytes: Uint8Array) => void = () => {}): Uint8Array {
  const enc = encodeGGUFHeader(
    {
      "general.architecture": { type: "string", value: "llama" },
      "t.u8": { type: "u8", value: 200 },
      "t.i8": { type: "i8", value: -5 },
      "t.u16": { type: "u16", value: 65000 },
      "t.i16": { type: "i16", value: -300 },
      "t.u32": { type: "u32", value: 4e9 },
      "t.i32": { type: "i32", value: -7 },
      "t.f32": { type: "f32", value: 0.5 },
      "t.bool": { type: "bool", value: true },
      "t.u64": { type: "u64", value: 2n ** 60n },
      "t.i64": { type: "i64", value: -9n },
      "t.f64": { type: "f64", value: 1e300 },
      "t.arr": { type: "array", elem: "string", value: ["a", "ü", ""] },
      "t.arrf": { type: "array", elem: "f32", value: [1.5, -2] },
    },
    tensors,
  );
  const out = new Uint8Array(enc.header.length + enc.dataLength);
  out.set(enc.header);
  for (const p of enc.placements)
    fill(p.name, out.subarray(enc.header.length + p.offset, enc.header.length + p.offset + p.byteLength));
  return out;
}

const T: GGUFWriteTensor[] = [
  { name: "w", ggmlDims: [32, 3], format: QUANT_FORMATS.Q8_0 },
  { name: "b", ggmlDims: [5], format: QUANT_FORMATS.F32 },
];

function err(bytes: Uint8Array): ModelError {
  try {
    new GGUFCheckpoint(new MemorySource(bytes, "m.gguf"));
  } catch (e) {
    if (e instanceof ModelError) return e;
    throw e;
  }
  throw new Error("expected a ModelError");
}

describe("round trip", () => {
  test("metadata of every type, row-major shape, packed bytes, decode", () => {
    const bytes = gguf(T, (name, b) => {
      if (name === "w")
        for (let r = 0; r < 3; r++) {
          b[34 * r] = 0x00;
          b[34 * r + 1] = 0x3c;
          for (let j = 0; j < 32; j++) b[34 * r + 2 + j] = (j - 16) & 0xff;
        }
      else new Uint8Array(b.buffer, b.byteOffset, 20).set(new Uint8Array(new Float32Array([1, 2, 3, 4, 5]).buffer));
    });
    const g = new GGUFCheckpoint(new MemorySource(bytes, "m.gguf"));
    const md = Object.fromEntries(g.metadata);
    expect(md).toEqual({
      "general.architecture": "llama",
      "t.u8": 200,
      "t.i8": -5,
      "t.u16": 65000,
      "t.i16": -300,
      "t.u32": 4e9,
      "t.i32": -7,
      "t.f32": 0.5,
      "t.bool": true,
      "t.u64": 2n ** 60n,
      "t.i64": -9,
      "t.f64": 1e300,
      "t.arr": ["a", "ü", ""],
      "t.arrf": [1.5, -2],
    });
    const w = g.info("w");
    expect([w.dtype, w.shape, w.ggmlDims, w.byteLength, w.byteOffset % 32]).toEqual(["Q8_0", [3, 32], [32, 3], 102, 0]);
    const dec = g.readF32Sync("w");
    expect(Array.from(dec.subarray(32, 64))).toEqual(Array.from({ length: 32 }, (_, j) => j - 16));
    expect(Array.from(g.readF32Sync("b"))).toEqual([1, 2, 3, 4, 5]);
    expect(g.readSync("w").byteLength).toBe(102);
  });
});

test("GGUF v2 files parse like v3 (same layout with 64-bit counts)", () => {
  const bytes = gguf(T);
  bytes[4] = 2;
  const g = new GGUFCheckpoint(new MemorySource(bytes, "v2.gguf"));
  expect([g.version, g.tensors().length, g.get("t.u16")]).toEqual([2, 2, 65000]);
});

describe("bad input", () => {
  const good = gguf(T);
  test("every truncation is a typed error with an offset", () => {
    for (let n = 0; n < good.length - 32; n++) {
      const e = err(good.slice(0, n));
      expect(["truncated", "out-of-bounds"]).toContain(e.code);
      expect(e.file).toBe("m.gguf");
    }
  });
  test("bad magic / version", () => {
    const a = good.slice();
    a[0] = 0x47 ^ 1;
    expect(err(a).code).toBe("bad-magic");
    const b = good.slice();
    b[4] = 1;
    expect([err(b).code, err(b).offset]).toEqual(["unsupported-version", 4]);
  });
  test("unsupported tensor type names the type id and tensor", () => {
    const bytes = gguf(T);
    // Patch w's type (u32 after name and dims) to IQ2_XXS (16).
    const name = new TextEncoder().encode("w");
    let at = -1;
    for (let i = 0; i < bytes.length - 9; i++)
      if (
        bytes[i] === 1 &&
        bytes.subarray(i + 1, i + 8).every((x) => x === 0) &&
        bytes[i + 8] === name[0] &&
        bytes[i + 9] === 2
      ) {
        at = i + 9;
        break;
      }
    const typeAt = at + 4 + 16;
    bytes[typeAt] = 16;
    const e = err(bytes);
    expect(e).toBeInstanceOf(UnsupportedTensorTypeError);
    expect([e.code, e.tensor, e.value]).toEqual(["unsupported-dtype", "w", 16]);
    expect(e.message).toContain("IQ2_XXS");
  });
  test("row not a multiple of the block size is bad-shape", () => {
    const bytes = gguf([{ name: "v", ggmlDims: [32], format: QUANT_FORMATS.Q8_0 }]);
    // Find the dim (u64 32) right after "v" and n_dims 1.
    const pos = [...bytes.keys()].find((k) => bytes[k] === 0x76 && bytes[k + 1] === 1 && bytes[k + 5] === 32)!;
    bytes[pos + 5] = 33;
    expect(err(bytes).code).toBe("bad-shape");
  });
});

describe("vocabulary strings (runs decoded at once and sliced, the rest one by one)", () => {
  // Lengths of 128+ bytes (a length byte past 0x7f) end a run; a 4-byte sequence is two UTF-16 units; a leading
  // U+FEFF is the token's, not a byte order mark.
  const words = [
    "x".repeat(24),
    "y".repeat(25),
    "\u0000\u007f",
    "Ġü",
    "\uFEFF",
    "𝄞é",
    "日本",
    "w".repeat(200),
    "\uFEFFa", // the first of a run
    "ü".repeat(300),
    "",
    "zz",
  ];
  const file = (value: string[] = words): Uint8Array => {
    const enc = encodeGGUFHeader(
      {
        "general.architecture": { type: "string", value: "llama" },
        "tokenizer.ggml.tokens": { type: "array", elem: "string", value },
      },
      [],
    );
    return enc.header;
  };
  const at = (bytes: Uint8Array, s: string): number => {
    const needle = new TextEncoder().encode(s);
    for (let i = 0; i < bytes.length; i++) if (needle.every((b, j) => bytes[i + j] === b)) return i;
    throw new Error(`${s} not in the file`);
  };
  test("every string as the UTF-8 decoder reads it", () => {
    expect(new GGUFCheckpoint(new MemorySource(file(), "m.gguf")).get("tokenizer.ggml.tokens")).toEqual(words);
  });
  test("a vocabulary over several 1 MiB windows reads back whole", () => {
    const many = Array.from({ length: 150_000 }, (_, i) => `${i % 3 === 0 ? "Ġ" : ""}t${i}${i % 7 === 0 ? "𝄞" : ""}`);
    many[70_000] = "q".repeat(70_000); // a string longer than what is left of a window
    const got = new GGUFCheckpoint(new MemorySource(file(many), "m.gguf")).get("tokenizer.ggml.tokens") as string[];
    // The first difference, not a diff of 150k strings.
    const bad = many.findIndex((w, i) => got[i] !== w);
    expect([got.length, bad, got[bad]]).toEqual([many.length, -1, undefined]);
  });
  test("a truncated vocabulary is truncated, not a short array", () => {
    const bytes = file();
    const e = err(bytes.subarray(0, at(bytes, "zz") + 1));
    expect(e.code).toBe("truncated");
  });
  test("invalid UTF-8 in a short string is bad-header at its length's offset", () => {
    const bytes = file();
    const i = at(bytes, "zz");
    bytes[i] = 0xff;
    const e = err(bytes);
    expect([e.code, e.offset]).toEqual(["bad-header", i - 8]);
    expect(e.message).toContain("not valid UTF-8");
  });
  test("a string length past 2^53 is bad-header, not a wrapped number", () => {
    const bytes = file();
    const i = at(bytes, "zz");
    bytes[i - 1] = 0x01; // the length's top byte: 2^56 + 2
    const e = err(bytes);
    expect(e.code).toBe("bad-header");
    expect(e.message).toContain("too large");
  });
});
