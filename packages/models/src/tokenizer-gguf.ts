// GGUF vocabularies (`tokenizer.ggml.*`) mapped to an equivalent tokenizer.json, so one implementation
// serves both formats: `gpt2` -> byte-level BPE with merges, `llama` -> SentencePiece-style BPE with byte fallback.
import { type BpeTables, vocabObject, withBpeTables } from "./bpe-tables.js";
import { TokenizerError } from "./errors.js";
import type { GGUFCheckpoint, GGUFValue } from "./gguf.js";
import { Tokenizer } from "./tokenizer.js";

/** llama.cpp token types (`llama_token_type`). */
const TYPE = { NORMAL: 1, UNKNOWN: 2, CONTROL: 3, USER_DEFINED: 4, UNUSED: 5, BYTE: 6 } as const;

const LLAMA3_SPLIT =
  "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const QWEN2_SPLIT =
  "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

const QWEN_PRES = new Set(["qwen2", "qwen35", "deepseek-r1-qwen"]);

/** Pre-tokenizer of a `tokenizer.ggml.pre` value (llama.cpp's names); unknown values are a typed error. */
function byteLevelPre(pre: string, file: string): object {
  const split = (regex: string) => ({
    type: "Sequence",
    pretokenizers: [
      { type: "Split", pattern: { Regex: regex }, behavior: "Isolated", invert: false },
      { type: "ByteLevel", add_prefix_space: false, trim_offsets: true, use_regex: false },
    ],
  });
  switch (pre) {
    case "llama-bpe":
    case "llama3":
    case "dbrx":
    case "smaug-bpe":
      return split(LLAMA3_SPLIT);
    case "qwen2":
    case "qwen35":
    case "deepseek-r1-qwen":
      return split(QWEN2_SPLIT);
    case "default":
    case "gpt-2":
    case "gpt2":
    case "olmo":
      return { type: "ByteLevel", add_prefix_space: false, trim_offsets: true, use_regex: true };
    default:
      throw new TokenizerError("tokenizer", `unsupported GGUF pre-tokenizer "${pre}"`, {
        file,
        key: "tokenizer.ggml.pre",
        value: pre,
      });
  }
}

function arr<T>(v: GGUFValue | undefined, key: string, file: string, check: (x: GGUFValue) => boolean): T[] {
  if (!Array.isArray(v) || !v.every(check))
    throw new TokenizerError("tokenizer", `${key} is missing or has the wrong type`, { file, key });
  return v as T[];
}

/** SentencePiece BPE as HF merges: every split a+b of a vocab token, ranked by that token's score (higher first). */
function spmMerges(tokens: string[], scores: number[], types: number[]): [string, string][] {
  const ids = new Map<string, number>();
  tokens.forEach((t, i) => {
    if (types[i] === TYPE.NORMAL && !ids.has(t)) ids.set(t, i);
  });
  const merges: { a: string; b: string; score: number; id: number; la: number }[] = [];
  for (const [t, id] of ids) {
    const chars = Array.from(t);
    for (let k = 1; k < chars.length; k++) {
      const a = chars.slice(0, k).join(""),
        b = chars.slice(k).join("");
      if (ids.has(a) && ids.has(b)) merges.push({ a, b, score: scores[id] ?? 0, id, la: ids.get(a)! });
    }
  }
  // Ties (same score) resolve like llama.cpp's SPM: lower token id first, then the left piece's id.
  merges.sort((x, y) => y.score - x.score || x.id - y.id || x.la - y.la);
  return merges.map((m) => [m.a, m.b]);
}

/** Builds a tokenizer.json-equivalent object from GGUF tokenizer metadata. */
export function tokenizerJsonFromGGUF(g: GGUFCheckpoint): {
  json: object;
  bosToken: string | null;
  eosToken: string | null;
} {
  const { json, bpe, bosToken, eosToken } = ggufTokenizerParts(g);
  return { json: bpe === undefined ? json : withBpeTables(json, bpe), bosToken, eosToken };
}

/**
 * tokenizer.json of a GGUF vocabulary; for byte-level BPE (`gpt2`) its model's `vocab` is `{}` and `merges` `[]`,
 * the header's own arrays in `bpe` instead (decision 1660). SentencePiece-style (`llama`) vocabularies are whole.
 */
function ggufTokenizerParts(g: GGUFCheckpoint): {
  json: object;
  bpe: BpeTables | undefined;
  bosToken: string | null;
  eosToken: string | null;
} {
  const file = g.path;
  const model = g.get("tokenizer.ggml.model");
  const tokens = arr<string>(
    g.get("tokenizer.ggml.tokens"),
    "tokenizer.ggml.tokens",
    file,
    (x) => typeof x === "string",
  );
  const typesV = g.get("tokenizer.ggml.token_type");
  const types =
    typesV === undefined
      ? tokens.map(() => TYPE.NORMAL)
      : arr<number>(typesV, "tokenizer.ggml.token_type", file, (x) => typeof x === "number");
  const idOf = (k: string): number | null => (typeof g.get(k) === "number" ? (g.get(k) as number) : null);
  const bos = idOf("tokenizer.ggml.bos_token_id"),
    eos = idOf("tokenizer.ggml.eos_token_id"),
    unk = idOf("tokenizer.ggml.unknown_token_id");
  const addBos = g.get("tokenizer.ggml.add_bos_token") === true,
    addEos = g.get("tokenizer.ggml.add_eos_token") === true;
  // llama.cpp matches CONTROL and USER_DEFINED tokens written in text; CONTROL ones are special.
  // One loop over the vocabulary, not a flatMap's array per token (128k of them for Llama 3).
  const added: object[] = [];
  for (let id = 0; id < tokens.length; id++) {
    const type = types[id];
    if (type !== TYPE.CONTROL && type !== TYPE.USER_DEFINED && type !== TYPE.UNKNOWN) continue;
    added.push({
      id,
      content: tokens[id]!,
      single_word: false,
      lstrip: false,
      rstrip: false,
      normalized: false,
      special: type !== TYPE.USER_DEFINED,
    });
  }
  const tok = (id: number | null) => (id === null ? null : (tokens[id] ?? null));
  const special = (id: number | null) =>
    id === null || tokens[id] === undefined ? [] : [{ SpecialToken: { id: tokens[id], type_id: 0 } }];
  const template = (seq: "A" | "B") => [
    ...(addBos ? special(bos) : []),
    { Sequence: { id: seq, type_id: 0 } },
    ...(addEos ? special(eos) : []),
  ];
  const specials = Object.fromEntries(
    [bos, eos]
      .filter((i): i is number => i !== null && tokens[i] !== undefined)
      .map((i) => [tokens[i]!, { id: tokens[i]!, ids: [i], tokens: [tokens[i]!] }]),
  );
  const post_processor =
    addBos || addEos
      ? {
          type: "TemplateProcessing",
          single: template("A"),
          pair: [...template("A"), ...template("B")],
          special_tokens: specials,
        }
      : null;
  let json: object;
  let bpe: BpeTables | undefined;
  if (model === "gpt2") {
    const merges = arr<string>(
      g.get("tokenizer.ggml.merges"),
      "tokenizer.ggml.merges",
      file,
      (x) => typeof x === "string",
    );
    const pre = g.get("tokenizer.ggml.pre");
    const preName = typeof pre === "string" ? pre : "default";
    // Qwen's tokenizer.json normalizes to NFC first; follow HF (the logits reference) rather than llama.cpp.
    const normalizer = QWEN_PRES.has(preName) ? { type: "NFC" } : null;
    json = {
      version: "1.0",
      added_tokens: added,
      normalizer,
      pre_tokenizer: byteLevelPre(preName, file),
      post_processor,
      decoder: { type: "ByteLevel", add_prefix_space: true, trim_offsets: true, use_regex: true },
      model: {
        type: "BPE",
        dropout: null,
        unk_token: null,
        continuing_subword_prefix: null,
        end_of_word_suffix: null,
        fuse_unk: false,
        byte_fallback: false,
        ignore_merges: false,
        vocab: {},
        merges: [],
      },
    };
    bpe = { tokens, merges };
  } else if (model === "llama") {
    const scores = arr<number>(
      g.get("tokenizer.ggml.scores"),
      "tokenizer.ggml.scores",
      file,
      (x) => typeof x === "number",
    );
    const prefix = g.get("tokenizer.ggml.add_space_prefix") !== false;
    json = {
      version: "1.0",
      added_tokens: added,
      normalizer: {
        type: "Sequence",
        normalizers: [
          ...(prefix ? [{ type: "Prepend", prepend: "▁" }] : []),
          { type: "Replace", pattern: { String: " " }, content: "▁" },
        ],
      },
      pre_tokenizer: null,
      post_processor,
      decoder: {
        type: "Sequence",
        decoders: [
          { type: "Replace", pattern: { String: "▁" }, content: " " },
          { type: "ByteFallback" },
          { type: "Fuse" },
          ...(prefix ? [{ type: "Strip", content: " ", start: 1, stop: 0 }] : []),
        ],
      },
      model: {
        type: "BPE",
        dropout: null,
        unk_token: tok(unk),
        continuing_subword_prefix: null,
        end_of_word_suffix: null,
        fuse_unk: true,
        byte_fallback: true,
        ignore_merges: false,
        vocab: vocabObject(tokens),
        merges: spmMerges(tokens, scores, types),
      },
    };
  } else {
    throw new TokenizerError("tokenizer", `unsupported GGUF tokenizer model ${JSON.stringify(model)}`, {
      file,
      key: "tokenizer.ggml.model",
      value: model,
    });
  }
  return { json, bpe, bosToken: tok(bos), eosToken: tok(eos) };
}

/** A {@link Tokenizer} from a GGUF file's vocabulary, special ids and `tokenizer.chat_template`. */
export function tokenizerFromGGUF(g: GGUFCheckpoint): Tokenizer {
  const { json, bpe, bosToken, eosToken } = ggufTokenizerParts(g);
  const ct = g.get("tokenizer.chat_template");
  return new Tokenizer(
    json,
    {},
    { bosToken, eosToken, chatTemplate: typeof ct === "string" ? ct : null, label: g.path, ...(bpe && { bpe }) },
  );
}
