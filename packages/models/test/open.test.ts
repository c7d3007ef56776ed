// Format-neutral entry points (folder or .gguf) and requireTensor's typed shape / dtype errors.
import { describe, expect, test } from "vitest";
import {
  GGUFCheckpoint,
  ModelError,
  SafetensorsCheckpoint,
  isGGUF,
  loadModelConfig,
  loadTokenizer,
  openCheckpoint,
  requireTensor,
} from "@poot/models";
import { fixture, needFixture } from "@poot/testkit";

// The fixture folders this file reads (in the repo's fixtures/; CI fails when one is missing).
const NO_FIXTURES = needFixture("gguf", "hf");
const FIXTURES = NO_FIXTURES === undefined ? fixture() : undefined;

describe.skipIf(!FIXTURES)("openCheckpoint / loadModelConfig / loadTokenizer", () => {
  test("a folder opens as safetensors, a .gguf as GGUF, with the same config facts and tokenization", () => {
    const hf = openCheckpoint(fixture("hf", "qwen3"));
    const gg = openCheckpoint(fixture("gguf", "qwen3", "model-Q8_0.gguf"));
    expect(hf).toBeInstanceOf(SafetensorsCheckpoint);
    expect(gg).toBeInstanceOf(GGUFCheckpoint);
    expect(isGGUF(fixture("hf", "qwen3", "config.json"))).toBe(false);
    expect(loadModelConfig(fixture("gguf", "qwen3", "model-Q8_0.gguf")).hiddenSize).toBe(
      loadModelConfig(fixture("hf", "qwen3")).hiddenSize,
    );
    const text = "The quick brown fox jumps over the lazy dog.";
    expect(loadTokenizer(fixture("gguf", "qwen3", "model-Q8_0.gguf")).encode(text)).toEqual(
      loadTokenizer(fixture("hf", "tokenizer-bytelevel")).encode(text),
    );
    hf.close();
    gg.close();
  });
  test("requireTensor: wrong shape / dtype / missing are typed errors naming file, tensor and offset", () => {
    const g = openCheckpoint(fixture("gguf", "llama3", "model-Q8_0.gguf"));
    expect(requireTensor(g, "token_embd.weight", { shape: [512, 64], dtypes: ["Q8_0", "F16"] }).dtype).toBe("Q8_0");
    const err = (f: () => unknown): ModelError => {
      try {
        f();
      } catch (e) {
        return e as ModelError;
      }
      throw new Error("no error");
    };
    const a = err(() => requireTensor(g, "token_embd.weight", { shape: [64, 512] }));
    expect([a.code, a.tensor, a.file, a.offset]).toEqual([
      "bad-shape",
      "token_embd.weight",
      fixture("gguf", "llama3", "model-Q8_0.gguf"),
      g.info("token_embd.weight").byteOffset,
    ]);
    expect(err(() => requireTensor(g, "token_embd.weight", { dtypes: ["F32"] })).code).toBe("wrong-dtype");
    expect(err(() => requireTensor(g, "blk.9.attn_q.weight")).code).toBe("missing-tensor");
    g.close();
  });
});
