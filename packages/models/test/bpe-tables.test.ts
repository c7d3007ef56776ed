// The BPE tables installed from arrays (decision 1660) give the state and the tokenizations that
// @huggingface/tokenizers builds itself from the same vocabulary as a tokenizer.json object: the library is the oracle.
import { describe, expect, test } from "vitest";
import { Tokenizer } from "@poot/models";
import { type BpeTables, canInstallBpeTables, withBpeTables } from "../src/bpe-tables.js";

// A vocabulary with what a Map keyed by "a b" could get wrong: a repeated token (the first id wins), repeated
// merges (the last rank wins), merges with no space, two spaces or a space at an end (the library ranks the first
// two parts of `split(" ", 2)`), tokens containing spaces, an added token that takes over a vocabulary string.
const tables: BpeTables = {
  tokens: ["a", "b", "c", " ", "x", "y", "ab", "bc", "abc", "b", "x y", "x ", "ca", "cab", "<s>", "zz"],
  merges: ["a b", "b c", "ab c", "a b", "c a", "x", "x  y", "ca b c", " ", "x y", "ca b"],
};
const json = (bpe: boolean) => {
  const j = {
    version: "1.0",
    added_tokens: [
      { id: 14, content: "<s>", special: true, single_word: false, lstrip: false, rstrip: false, normalized: false },
      { id: 15, content: "cab", special: false, single_word: false, lstrip: false, rstrip: false, normalized: false },
    ],
    normalizer: null,
    pre_tokenizer: null,
    post_processor: null,
    decoder: null,
    model: {
      type: "BPE",
      dropout: null,
      unk_token: "zz",
      continuing_subword_prefix: null,
      end_of_word_suffix: null,
      fuse_unk: false,
      byte_fallback: false,
      ignore_merges: false,
      vocab: {},
      merges: [],
    },
  };
  return bpe ? j : withBpeTables(j, tables);
};
const texts = ["abc", "abcabc", "cabc", "bca", "x y", "x  y", "ab c", "<s>abc", "zzq", "cab", "aabbcc", "c a b"];

type Model = { tokens_to_ids: Map<string, number>; vocab: unknown[]; unk_token_id: unknown };
const modelOf = (t: Tokenizer) => (t as unknown as { hf: { model: Model } }).hf.model;

describe("BPE tables installed from arrays", () => {
  const fast = new Tokenizer(json(true), {}, { bpe: tables });
  const lib = new Tokenizer(json(false));

  test("the model's tables equal the library's own", () => {
    const [f, l] = [modelOf(fast), modelOf(lib)];
    expect([...f.tokens_to_ids].sort()).toEqual([...l.tokens_to_ids].sort());
    expect(f.vocab).toEqual(l.vocab);
    expect(f.vocab.length).toBe(l.vocab.length);
    expect(f.unk_token_id).toBe(l.unk_token_id);
  });

  test("tokenizations equal the library's, with and without special tokens parsed", () => {
    for (const text of texts)
      for (const parseSpecial of [true, false])
        expect([text, parseSpecial, fast.encodeWithTokens(text, { parseSpecial })]).toEqual([
          text,
          parseSpecial,
          lib.encodeWithTokens(text, { parseSpecial }),
        ]);
    expect(fast.decode([0, 1, 2, 14, 15])).toBe(lib.decode([0, 1, 2, 14, 15]));
  });

  test("planted: the first rank of a repeated merge (not the library's last) changes a tokenization", () => {
    const firstWins: BpeTables = { tokens: tables.tokens, merges: tables.merges.filter((m, i) => i !== 3) };
    const planted = new Tokenizer(json(true), {}, { bpe: firstWins });
    expect(texts.some((t) => JSON.stringify(planted.encode(t)) !== JSON.stringify(lib.encode(t)))).toBe(true);
  });

  test("a library without the BPE fields it replaces is detected (the tokenizer is then built from the object)", () => {
    const hf = (lib as unknown as { hf: Parameters<typeof canInstallBpeTables>[0] }).hf;
    expect(canInstallBpeTables(hf)).toBe(true);
    const renamed = { ...hf, model: { ...(hf.model as object), add_node: undefined } };
    expect(canInstallBpeTables(renamed)).toBe(false);
  });
});
