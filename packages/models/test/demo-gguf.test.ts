// The committed demo model (models/demo) converted by convertLlamaToGGUF: byte-identical to llama.cpp's own
// `gguf` writer, and read back by poot's GGUF reader it agrees with config.json, the safetensors and tokenizer.json.
import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import {
  ConfigError,
  Tokenizer,
  configFromGGUF,
  convertLlamaToGGUF,
  llamaQKRowOrder,
  openGGUF,
  openSafetensors,
  tokenizerFromGGUF,
  unpermuteLlamaQK,
  type GGUFCheckpoint,
  type SafetensorsCheckpoint,
} from "@poot/models";
import { REPO_ROOT } from "@poot/testkit";

/**
 * sha256 of models/demo/model.gguf as written by tools/demo-model/to_gguf.py with llama.cpp's Python `gguf`
 * 0.19.0 writer (an independent implementation). Retraining the model changes it: rerun that script.
 */
const LLAMA_CPP_GGUF_SHA256 = "3c2eaff0e14e290a456807c0b4a1e457ed5f9e53471ede09909b3b87f316cb1b";

const demo = path.join(REPO_ROOT, "models", "demo");
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "poot-demo-gguf-"));
const out = path.join(tmp, "model.gguf");
const config = JSON.parse(fs.readFileSync(path.join(demo, "config.json"), "utf8")) as Record<
  string,
  number | boolean | object
>;
const reference = JSON.parse(fs.readFileSync(path.join(demo, "reference.json"), "utf8")) as {
  prompt: string;
  prompt_ids: number[];
  chat_messages: { role: string; content: string }[];
  chat_text: string;
  chat_ids: number[];
};
let g: GGUFCheckpoint;
let st: SafetensorsCheckpoint;

beforeAll(() => {
  convertLlamaToGGUF(demo, out, { name: "poot-demo" });
  g = openGGUF(out);
  st = openSafetensors(demo);
});
afterAll(() => {
  g.close();
  st.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

describe("convertLlamaToGGUF on models/demo", () => {
  test("is byte-identical to llama.cpp's gguf writer", () => {
    expect(createHash("sha256").update(fs.readFileSync(out)).digest("hex")).toBe(LLAMA_CPP_GGUF_SHA256);
  });

  test("configFromGGUF agrees with config.json", () => {
    const c = configFromGGUF(g);
    expect(c.architecture).toBe("llama");
    expect(c.vocabSize).toBe(config.vocab_size);
    expect(c.hiddenSize).toBe(config.hidden_size);
    expect(c.intermediateSize).toBe(config.intermediate_size);
    expect(c.numLayers).toBe(config.num_hidden_layers);
    expect(c.numHeads).toBe(config.num_attention_heads);
    expect(c.numKVHeads).toBe(config.num_key_value_heads);
    expect(c.headDim).toBe(config.head_dim);
    expect(c.maxPositions).toBe(config.max_position_embeddings);
    // GGUF stores eps and theta as f32.
    expect(c.rmsNormEps).toBe(Math.fround(config.rms_norm_eps as number));
    expect(c.rope.theta).toBe((config.rope_parameters as { rope_theta: number }).rope_theta);
    expect(c.rope.rotaryDim).toBe(config.head_dim);
    expect(c.tieWordEmbeddings).toBe(true);
    expect(c.bosTokenId).toBe(config.bos_token_id);
    expect(c.eosTokenIds).toEqual([config.eos_token_id]);
  });

  test("every tensor holds the safetensors values (Q/K rows un-permuted, norms widened exactly)", () => {
    const headDim = config.head_dim as number;
    const stNames = st
      .tensors()
      .map((t) => t.name)
      .sort();
    expect(g.tensors()).toHaveLength(stNames.length);
    let checked = 0;
    for (const t of g.tensors()) {
      const m = /^blk\.(\d+)\.(\w+)\.weight$/.exec(t.name);
      const hf =
        t.name === "token_embd.weight"
          ? "model.embed_tokens.weight"
          : t.name === "output_norm.weight"
            ? "model.norm.weight"
            : `model.layers.${m![1]}.${{ attn_norm: "input_layernorm", attn_q: "self_attn.q_proj", attn_k: "self_attn.k_proj", attn_v: "self_attn.v_proj", attn_output: "self_attn.o_proj", ffn_norm: "post_attention_layernorm", ffn_gate: "mlp.gate_proj", ffn_up: "mlp.up_proj", ffn_down: "mlp.down_proj" }[m![2]!]}.weight`;
      const s = st.info(hf);
      expect(t.shape, t.name).toEqual(s.shape);
      expect(s.dtype).toBe("BF16");
      const want = new Uint16Array(st.readSync(hf).slice().buffer);
      if (t.shape.length === 1) {
        // llama.cpp keeps norms in F32: each value must be the bf16 bits shifted up, low half zero.
        expect(t.dtype).toBe("F32");
        const bits = new Uint32Array(g.readSync(t.name).slice().buffer);
        expect(Array.from(bits, (b) => b >>> 16)).toEqual(Array.from(want));
        expect(bits.every((b) => (b & 0xffff) === 0)).toBe(true);
      } else {
        expect(t.dtype).toBe("BF16");
        let bytes = g.readSync(t.name).slice();
        const heads =
          m?.[2] === "attn_q"
            ? (config.num_attention_heads as number)
            : m?.[2] === "attn_k"
              ? (config.num_key_value_heads as number)
              : 0;
        if (heads > 0) bytes = unpermuteLlamaQK(bytes, heads, headDim, 2 * t.shape[1]!);
        expect(Buffer.from(bytes.buffer).equals(Buffer.from(want.buffer)), t.name).toBe(true);
      }
      checked++;
    }
    expect(checked).toBe(74);
  });

  test("Q rows really are permuted in the file (the un-permute above is not a no-op)", () => {
    const order = llamaQKRowOrder(config.num_attention_heads as number, config.head_dim as number);
    expect(order[1]).toBe((config.head_dim as number) / 2);
    const raw = g.readSync("blk.0.attn_q.weight");
    const hf = st.readSync("model.layers.0.self_attn.q_proj.weight");
    const row = 2 * (config.hidden_size as number);
    expect(Buffer.from(raw.subarray(row, 2 * row)).equals(Buffer.from(hf.subarray(row, 2 * row)))).toBe(false);
  });

  test("the GGUF tokenizer encodes like tokenizer.json and like the Python tokenizer of the reference", () => {
    const fromGGUF = tokenizerFromGGUF(g);
    const fromJson = Tokenizer.fromFolder(demo);
    const texts = [
      reference.prompt,
      "In the beginning God created the heaven and the earth.\n",
      "  tabs\tand  spaces \n\n",
      "Ünïcödé — «quotes» 123456",
      "<|user|>hi<|assistant|>there<|eos|>",
    ];
    for (const s of texts) expect(fromGGUF.encode(s), s).toEqual(fromJson.encode(s));
    // The ids recorded by Hugging Face's Python tokenizer on the GPU machine.
    expect(fromGGUF.encode(reference.prompt, { addSpecial: true })).toEqual(reference.prompt_ids);
    const chat = fromGGUF.applyChatTemplate(reference.chat_messages);
    expect(chat).toBe(reference.chat_text);
    expect(fromGGUF.encode(chat)).toEqual(reference.chat_ids);
    expect(fromGGUF.decode(reference.prompt_ids, { skipSpecial: true })).toBe(reference.prompt);
  });

  test("a non-llama config is a typed error", () => {
    const bad = fs.mkdtempSync(path.join(os.tmpdir(), "poot-demo-bad-"));
    try {
      fs.writeFileSync(
        path.join(bad, "config.json"),
        JSON.stringify({ ...config, architectures: ["Qwen2ForCausalLM"], model_type: "qwen2" }),
      );
      expect(() => convertLlamaToGGUF(bad, path.join(bad, "m.gguf"))).toThrow(ConfigError);
    } finally {
      fs.rmSync(bad, { recursive: true, force: true });
    }
  });
});
