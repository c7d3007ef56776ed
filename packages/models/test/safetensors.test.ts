// safetensors: fixture folders (f32 vs bf16 files), self-made single/sharded files with known values,
// and typed errors for bad input.
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { describe, expect, test } from "vitest";
import { CheckpointFormatError, MemorySource, ModelError, openSafetensors, parseSafetensorsHeader } from "@poot/models";
import { fixture, needFixture } from "@poot/testkit";

// The fixture folders this file reads (in the repo's fixtures/; CI fails when one is missing).
const NO_FIXTURES = needFixture("hf");
const FIXTURES = NO_FIXTURES === undefined ? fixture() : undefined;

/** Builds safetensors bytes from a header object and a data blob (the format: u64 len, JSON, data). */
function build(header: unknown, data: Uint8Array): Uint8Array {
  const json = new TextEncoder().encode(JSON.stringify(header));
  const out = new Uint8Array(8 + json.length + data.length);
  new DataView(out.buffer).setBigUint64(0, BigInt(json.length), true);
  out.set(json, 8);
  out.set(data, 8 + json.length);
  return out;
}

function errorOf(f: () => unknown): ModelError {
  try {
    f();
  } catch (e) {
    if (e instanceof ModelError) return e;
    throw e;
  }
  throw new Error("expected a ModelError");
}

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "poot-st-"));

describe("self-made files", () => {
  // f16 1.5 = 0x3e00, -2 = 0xc000; bf16 1.0 = 0x3f80, -0.5 = 0xbf00; f32 3.25.
  const f16 = new Uint8Array([0x00, 0x3e, 0x00, 0xc0]);
  const bf16 = new Uint8Array([0x80, 0x3f, 0x00, 0xbf]);
  const f32 = new Uint8Array(new Float32Array([3.25]).buffer);
  test("single file: dtypes widen exactly, shapes and offsets", async () => {
    const data = new Uint8Array([...f16, ...bf16, ...f32]);
    const file = path.join(tmp, "one.safetensors");
    fs.writeFileSync(
      file,
      build(
        {
          __metadata__: { format: "pt" },
          a: { dtype: "F16", shape: [2], data_offsets: [0, 4] },
          b: { dtype: "BF16", shape: [1, 2], data_offsets: [4, 8] },
          c: { dtype: "F32", shape: [], data_offsets: [8, 12] },
        },
        data,
      ),
    );
    const ck = openSafetensors(file);
    expect(ck.metadata).toEqual({ format: "pt" });
    expect(ck.tensors().map((t) => [t.name, t.dtype, t.shape])).toEqual([
      ["a", "F16", [2]],
      ["b", "BF16", [1, 2]],
      ["c", "F32", []],
    ]);
    expect(Array.from(await ck.readF32("a"))).toEqual([1.5, -2]);
    expect(Array.from(ck.readF32Sync("b"))).toEqual([1, -0.5]);
    expect(Array.from(await ck.readF32("c"))).toEqual([3.25]);
    expect(Array.from(await ck.read("a"))).toEqual(Array.from(f16));
    expect(errorOf(() => ck.info("nope")).code).toBe("missing-tensor");
    ck.close();
    expect(errorOf(() => ck.readSync("a")).code).toBe("closed");
  });
  test("sharded folder via model.safetensors.index.json", async () => {
    const dir = fs.mkdtempSync(path.join(tmp, "shard-"));
    fs.writeFileSync(
      path.join(dir, "model-00001-of-00002.safetensors"),
      build({ x: { dtype: "F16", shape: [2], data_offsets: [0, 4] } }, f16),
    );
    fs.writeFileSync(
      path.join(dir, "model-00002-of-00002.safetensors"),
      build({ y: { dtype: "F32", shape: [1], data_offsets: [0, 4] } }, f32),
    );
    fs.writeFileSync(
      path.join(dir, "model.safetensors.index.json"),
      JSON.stringify({
        metadata: {},
        weight_map: { x: "model-00001-of-00002.safetensors", y: "model-00002-of-00002.safetensors" },
      }),
    );
    const ck = openSafetensors(dir);
    expect(
      ck
        .tensors()
        .map((t) => t.name)
        .sort(),
    ).toEqual(["x", "y"]);
    expect(Array.from(await ck.readF32("x"))).toEqual([1.5, -2]);
    expect(Array.from(await ck.readF32("y"))).toEqual([3.25]);
    expect(ck.info("y").file).toBe(path.join(dir, "model-00002-of-00002.safetensors"));
    ck.close();
    // An index naming a tensor no shard holds is a typed missing-tensor error naming it.
    fs.writeFileSync(
      path.join(dir, "model.safetensors.index.json"),
      JSON.stringify({
        weight_map: {
          x: "model-00001-of-00002.safetensors",
          y: "model-00002-of-00002.safetensors",
          z: "model-00002-of-00002.safetensors",
        },
      }),
    );
    const e = errorOf(() => openSafetensors(dir));
    expect([e.code, e.tensor]).toEqual(["missing-tensor", "z"]);
  });
  test("integer dtype read as f32 is a typed wrong-dtype error", () => {
    const file = path.join(tmp, "int.safetensors");
    fs.writeFileSync(file, build({ i: { dtype: "I32", shape: [1], data_offsets: [0, 4] } }, new Uint8Array(4)));
    const ck = openSafetensors(file);
    const e = errorOf(() => ck.readF32Sync("i"));
    expect([e.code, e.tensor, e.file]).toEqual(["wrong-dtype", "i", file]);
    ck.close();
  });
});

describe("bad input gives typed errors with context", () => {
  const good = { t: { dtype: "F32", shape: [2], data_offsets: [0, 8] } };
  const cases: [string, Uint8Array, string, string | undefined][] = [
    ["too short", new Uint8Array(5), "truncated", undefined],
    [
      "header length past end",
      (() => {
        const b = build(good, new Uint8Array(8));
        new DataView(b.buffer).setBigUint64(0, 1n << 40n, true);
        return b;
      })(),
      "truncated",
      undefined,
    ],
    [
      "bad JSON",
      (() => {
        const b = build(good, new Uint8Array(8));
        b[8] = 0x7b;
        b[9] = 0x7b;
        return b;
      })(),
      "bad-json",
      undefined,
    ],
    ["JSON array", build([1, 2], new Uint8Array(0)), "bad-json", undefined],
    [
      "unknown dtype",
      build({ t: { dtype: "F7", shape: [2], data_offsets: [0, 8] } }, new Uint8Array(8)),
      "unsupported-dtype",
      "t",
    ],
    [
      "shape × dtype ≠ bytes",
      build({ t: { dtype: "F32", shape: [3], data_offsets: [0, 8] } }, new Uint8Array(8)),
      "bad-shape",
      "t",
    ],
    [
      "negative dim",
      build({ t: { dtype: "F32", shape: [-2], data_offsets: [0, 8] } }, new Uint8Array(8)),
      "bad-shape",
      "t",
    ],
    [
      "data past end",
      build({ t: { dtype: "F32", shape: [4], data_offsets: [0, 16] } }, new Uint8Array(8)),
      "out-of-bounds",
      "t",
    ],
    [
      "overlap",
      build(
        {
          a: { dtype: "F32", shape: [2], data_offsets: [0, 8] },
          b: { dtype: "F32", shape: [1], data_offsets: [4, 8] },
        },
        new Uint8Array(8),
      ),
      "overlap",
      "b",
    ],
  ];
  for (const [what, bytes, code, tensor] of cases) {
    test(what, () => {
      const e = errorOf(() => parseSafetensorsHeader(new MemorySource(bytes, "mem.safetensors")));
      expect(e).toBeInstanceOf(ModelError);
      if (code !== "unsupported-dtype") expect(e).toBeInstanceOf(CheckpointFormatError);
      expect(e.code).toBe(code);
      expect(e.file).toBe("mem.safetensors");
      expect(e.tensor).toBe(tensor);
      expect(typeof e.offset).toBe("number");
    });
  }
  test("missing file is an io error naming it", () => {
    const e = errorOf(() => openSafetensors(path.join(tmp, "absent.safetensors")));
    expect([e.code, e.file]).toEqual(["io", path.join(tmp, "absent.safetensors")]);
  });
});

describe.skipIf(!FIXTURES)("fixture folders", () => {
  for (const fam of ["llama3", "qwen3", "gemma3", "olmoe", "qwen35"]) {
    test(`${fam}: model.bf16.safetensors widens to exactly model.safetensors (weights are bf16-exact)`, async () => {
      const f32 = openSafetensors(fixture("hf", fam));
      const bf = openSafetensors(fixture("hf", fam), { fileName: "model.bf16.safetensors" });
      // The bf16 files (transformers 5 save format) also store tied lm_head and stack MoE experts.
      const common = f32.tensors().filter((t) => bf.has(t.name));
      const extra = bf
        .tensors()
        .filter((t) => !f32.has(t.name))
        .map((t) => t.name);
      expect(extra.every((n) => n === "lm_head.weight" || /\.mlp\.experts\.(gate_up_proj|down_proj)$/.test(n))).toBe(
        true,
      );
      expect(common.length + f32.tensors().filter((t) => /\.experts\.\d+\./.test(t.name)).length).toBe(
        f32.tensors().length,
      );
      for (const t of common) {
        expect(t.dtype).toBe("F32");
        expect(bf.info(t.name).dtype).toBe("BF16");
        expect(bf.info(t.name).shape).toEqual(t.shape);
        const a = await f32.readF32(t.name);
        const b = await bf.readF32(t.name);
        expect(Buffer.from(b.buffer).equals(Buffer.from(a.buffer))).toBe(true);
      }
      if (fam === "olmoe") {
        // gate_up_proj[e] = concat(gate_proj_e, up_proj_e) along rows; down_proj[e] = down_proj_e.
        const gu = await bf.readF32("model.layers.0.mlp.experts.gate_up_proj");
        const dn = await bf.readF32("model.layers.0.mlp.experts.down_proj");
        for (let e = 0; e < 8; e++) {
          const g = await f32.readF32(`model.layers.0.mlp.experts.${e}.gate_proj.weight`);
          const u = await f32.readF32(`model.layers.0.mlp.experts.${e}.up_proj.weight`);
          const d = await f32.readF32(`model.layers.0.mlp.experts.${e}.down_proj.weight`);
          expect(Array.from(gu.subarray(e * 4096, e * 4096 + 2048))).toEqual(Array.from(g));
          expect(Array.from(gu.subarray(e * 4096 + 2048, (e + 1) * 4096))).toEqual(Array.from(u));
          expect(Array.from(dn.subarray(e * 2048, (e + 1) * 2048))).toEqual(Array.from(d));
        }
      }
      f32.close();
      bf.close();
    });
  }
  test("reference.safetensors logits have the [T, V] shape of reference.json", async () => {
    const ref = JSON.parse(fs.readFileSync(fixture("hf", "llama3", "reference.json"), "utf8")) as {
      prompt_ids: number[];
    };
    const ck = openSafetensors(fixture("hf", "llama3", "reference.safetensors"));
    const info = ck.info("prompt_logits");
    expect(info.shape[0]).toBe(ref.prompt_ids.length);
    const cfg = JSON.parse(fs.readFileSync(fixture("hf", "llama3", "config.json"), "utf8")) as { vocab_size: number };
    expect(info.shape[1]).toBe(cfg.vocab_size);
    ck.close();
  });
});
