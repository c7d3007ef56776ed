// Tokenizer: Hugging Face tokenizer.json semantics through @huggingface/tokenizers (decision 0200),
// plus chat templates rendered with @huggingface/jinja and incremental (streaming) detokenization.
import * as fs from "node:fs";
import * as path from "node:path";
import { Template } from "@huggingface/jinja";
import { Tokenizer as HFTokenizer } from "@huggingface/tokenizers";
import { type BpeTables, canInstallBpeTables, installBpeTables, withBpeTables } from "./bpe-tables.js";
import { TokenizerError } from "./errors.js";

/** Options of {@link Tokenizer.encode}. */
export interface EncodeOptions {
  /** Add BOS/EOS as the tokenizer's post-processor says (HF `add_special_tokens`). Default false. */
  readonly addSpecial?: boolean;
  /**
   * Match special tokens written in the text (`<|eos|>` -> the EOS id), as HF tokenizers do. Default true; false
   * tokenizes them as the text they are (llama.cpp's `parse_special = false`), for untrusted text such as a chat
   * user's message. With false, a special token's {@link Tokenizer.specialAlias} still encodes to its id, so a
   * caller can mark the special tokens it means in one string and have every other look-alike read as text.
   */
  readonly parseSpecial?: boolean;
}

/** Options of {@link Tokenizer.decode}. */
export interface DecodeOptions {
  /** Drop special tokens from the text. Default false. */
  readonly skipSpecial?: boolean;
}

/** A chat message for {@link Tokenizer.applyChatTemplate}. */
export interface ChatMessage {
  readonly role: string;
  readonly content: string;
  readonly [key: string]: unknown;
}

/** Options of {@link Tokenizer.applyChatTemplate}. */
export interface ChatTemplateOptions {
  /** Append the assistant turn header (default true). */
  readonly addGenerationPrompt?: boolean;
  /** Extra variables for the template (tools, date strings, enable_thinking, ...). */
  readonly variables?: Readonly<Record<string, unknown>>;
}

/** Metadata the HF library does not carry: special token ids/strings and the chat template. */
export interface TokenizerMeta {
  readonly bosToken: string | null;
  readonly eosToken: string | null;
  readonly chatTemplate: string | null;
  /** Where it was loaded from (errors). */
  readonly label: string;
  /**
   * A BPE model's vocabulary and merges as arrays, when tokenizer.json's model leaves `vocab` `{}` and `merges` `[]`
   * (the GGUF path: no 128k-key object is built for the library to turn into a Map, decision 1660).
   */
  readonly bpe?: BpeTables;
}

type AddedTokenJson = { id: number; content: string; special?: boolean };

/** The library's tokenizer of `json`, with `bpe`'s tables installed where given. */
function buildHF(json: object, config: Record<string, unknown>, bpe: BpeTables | undefined): HFTokenizer {
  if (bpe === undefined) return new HFTokenizer(json, config);
  const hf = new HFTokenizer(json, config);
  if (!canInstallBpeTables(hf)) return new HFTokenizer(withBpeTables(json, bpe), config);
  installBpeTables(hf, bpe, (json as { added_tokens?: AddedTokenJson[] }).added_tokens ?? []);
  return hf;
}

function tokenString(v: unknown): string | null {
  if (typeof v === "string") return v;
  if (typeof v === "object" && v !== null && typeof (v as { content?: unknown }).content === "string")
    return (v as { content: string }).content;
  return null;
}

/** First code point of {@link Tokenizer.specialAlias} (Supplementary Private Use Area-A). */
export const SPECIAL_ALIAS_BASE = 0xf0000;

/** A text tokenizer with HF `tokenizers` semantics: added/special tokens in text are matched; BOS/EOS only when asked. */
export class Tokenizer {
  private readonly hf: HFTokenizer;
  /** The same tokenizer with its special added tokens renamed to their aliases, built on first use (parseSpecial false). */
  private plain: HFTokenizer | undefined;
  private readonly source: {
    readonly json: object;
    readonly config: Record<string, unknown>;
    readonly bpe: BpeTables | undefined;
  };
  /** The special added tokens' strings (`special: true` in tokenizer.json), longest first. */
  readonly specialTokens: readonly string[];
  /** The model's vocabulary, both ways (the HF model's own tables: building copies cost a start ~100 ms). */
  private readonly model: {
    readonly vocab: readonly (string | undefined)[];
    readonly tokens_to_ids: Map<string, number>;
  };
  /** Added tokens, by string and by id (they take precedence over the model's vocabulary). */
  private readonly added: Map<string, number>;
  private readonly addedById: Map<number, string>;
  /** BOS token string, or null. */
  readonly bosToken: string | null;
  /** EOS token string, or null. */
  readonly eosToken: string | null;
  /** Jinja chat template source, or null. */
  readonly chatTemplate: string | null;
  private template: Template | undefined;
  private readonly label: string;

  /**
   * Builds a tokenizer from a parsed tokenizer.json and optional tokenizer_config.json.
   * `meta` overrides what the config says (used by the GGUF path).
   */
  constructor(
    tokenizerJson: unknown,
    tokenizerConfig: Record<string, unknown> = {},
    meta: Partial<TokenizerMeta> = {},
  ) {
    this.label = meta.label ?? "<tokenizer.json>";
    if (
      typeof tokenizerJson !== "object" ||
      tokenizerJson === null ||
      typeof (tokenizerJson as { model?: unknown }).model !== "object"
    ) {
      throw new TokenizerError("tokenizer", "tokenizer.json must be an object with a model", { file: this.label });
    }
    // Rust `tokenizers` does no clean-up on decode; transformers only does when the config asks.
    const config = { clean_up_tokenization_spaces: false, ...tokenizerConfig };
    try {
      this.hf = buildHF(tokenizerJson as object, config, meta.bpe);
    } catch (cause) {
      throw new TokenizerError(
        "tokenizer",
        `cannot build tokenizer: ${(cause as Error).message}`,
        { file: this.label },
        { cause },
      );
    }
    const tj = tokenizerJson as {
      model: { vocab?: unknown };
      added_tokens?: AddedTokenJson[];
    };
    this.source = { json: tokenizerJson as object, config, bpe: meta.bpe };
    this.specialTokens = (tj.added_tokens ?? [])
      .filter((a) => a.special === true)
      .map((a) => a.content)
      .sort((a, b) => b.length - a.length);
    if (this.hf.model === null)
      throw new TokenizerError("tokenizer", "tokenizer.json has no model", { file: this.label });
    this.model = this.hf.model;
    this.added = new Map((tj.added_tokens ?? []).map((a) => [a.content, a.id]));
    this.addedById = new Map([...this.added].map(([k, id]) => [id, k]));
    this.bosToken = meta.bosToken !== undefined ? meta.bosToken : tokenString(tokenizerConfig.bos_token);
    this.eosToken = meta.eosToken !== undefined ? meta.eosToken : tokenString(tokenizerConfig.eos_token);
    const ct = meta.chatTemplate !== undefined ? meta.chatTemplate : tokenizerConfig.chat_template;
    this.chatTemplate =
      typeof ct === "string"
        ? ct
        : Array.isArray(ct)
          ? ((ct.find((t: { name?: string }) => t.name === "default") as { template?: string } | undefined)?.template ??
            null)
          : null;
  }

  /** Loads `tokenizer.json` (+ `tokenizer_config.json` when present) from a model folder. */
  static fromFolder(folder: string): Tokenizer {
    const read = (f: string): unknown => {
      try {
        return JSON.parse(fs.readFileSync(path.join(folder, f), "utf8"));
      } catch (cause) {
        throw new TokenizerError(
          "tokenizer",
          `cannot read ${f}: ${(cause as Error).message}`,
          { file: path.join(folder, f) },
          { cause },
        );
      }
    };
    const cfgPath = path.join(folder, "tokenizer_config.json");
    const config = fs.existsSync(cfgPath) ? (read("tokenizer_config.json") as Record<string, unknown>) : {};
    return new Tokenizer(read("tokenizer.json"), config, { label: path.join(folder, "tokenizer.json") });
  }

  /** Number of ids: one past the largest id of the vocabulary and added tokens. */
  get vocabSize(): number {
    let max = this.model.vocab.length - 1;
    while (max >= 0 && this.model.vocab[max] === undefined) max--;
    for (const id of this.addedById.keys()) if (id > max) max = id;
    return max + 1;
  }
  /** Id of the BOS token, or null. */
  get bosTokenId(): number | null {
    return this.bosToken === null ? null : (this.tokenToId(this.bosToken) ?? null);
  }
  /** Id of the EOS token, or null. */
  get eosTokenId(): number | null {
    return this.eosToken === null ? null : (this.tokenToId(this.eosToken) ?? null);
  }
  /** Id of a token string (vocabulary or added token). */
  tokenToId(token: string): number | undefined {
    return this.added.get(token) ?? this.model.tokens_to_ids.get(token);
  }
  /** Token string of an id. */
  idToToken(id: number): string | undefined {
    const added = this.addedById.get(id);
    if (added !== undefined) return added;
    const t = this.model.vocab[id];
    // A model token whose string an added token took over under another id has no string of its own.
    return t !== undefined && this.tokenToId(t) === id ? t : undefined;
  }

  /** Encodes text to ids. */
  encode(text: string, options: EncodeOptions = {}): number[] {
    return this.encodeWithTokens(text, options).ids;
  }
  /** Encodes text to ids and token strings. */
  encodeWithTokens(text: string, options: EncodeOptions = {}): { ids: number[]; tokens: string[] } {
    try {
      const e = this.hfFor(options.parseSpecial ?? true).encode(text, {
        add_special_tokens: options.addSpecial ?? false,
      });
      return { ids: e.ids, tokens: e.tokens };
    } catch (cause) {
      throw new TokenizerError(
        "tokenizer",
        `cannot encode: ${(cause as Error).message}`,
        { file: this.label },
        { cause },
      );
    }
  }
  private hfFor(parseSpecial: boolean): HFTokenizer {
    if (parseSpecial || !this.specialTokens.some((t) => t !== "")) return this.hf;
    if (this.plain === undefined) {
      // Renamed, the special tokens' own strings are no longer split out of the text, so the model's pre-tokenizer
      // and vocabulary tokenize them like any other text; their aliases split out instead, in the same one pass
      // (so sections between them are pre-tokenized exactly as with the real strings).
      const j = this.source.json as { added_tokens?: { special?: boolean; content: string }[] };
      const added = (j.added_tokens ?? []).map((a) =>
        a.special === true ? { ...a, content: this.specialAlias(a.content)! } : a,
      );
      this.plain = buildHF({ ...j, added_tokens: added }, this.source.config, this.source.bpe);
    }
    return this.plain;
  }

  /**
   * A one-character stand-in for a special token (a code point of Unicode plane 15, private use), which
   * `encode(text, { parseSpecial: false })` turns into that token's id; undefined for other strings.
   */
  specialAlias(token: string): string | undefined {
    const i = this.specialTokens.indexOf(token);
    return i < 0 ? undefined : String.fromCodePoint(SPECIAL_ALIAS_BASE + i);
  }

  /** Decodes ids to text (an empty list decodes to ""). */
  decode(ids: readonly number[], options: DecodeOptions = {}): string {
    if (ids.length === 0) return "";
    for (const id of ids) {
      if (this.idToToken(id) === undefined)
        throw new TokenizerError("tokenizer", `token id ${id} is not in the vocabulary`, {
          file: this.label,
          value: id,
        });
    }
    return this.hf.decode([...ids], { skip_special_tokens: options.skipSpecial ?? false });
  }

  /** Renders the chat template with `messages` (HF `apply_chat_template(tokenize=False)`). */
  applyChatTemplate(messages: readonly ChatMessage[], options: ChatTemplateOptions = {}): string {
    if (this.chatTemplate === null)
      throw new TokenizerError("chat-template", "this tokenizer has no chat template", { file: this.label });
    try {
      this.template ??= new Template(this.chatTemplate);
      return this.template.render({
        bos_token: this.bosToken ?? "",
        eos_token: this.eosToken ?? "",
        add_generation_prompt: options.addGenerationPrompt ?? true,
        ...options.variables,
        messages,
      });
    } catch (cause) {
      throw new TokenizerError(
        "chat-template",
        `chat template failed: ${(cause as Error).message}`,
        { file: this.label },
        { cause },
      );
    }
  }

  /** A decoder that turns ids pushed one at a time into text pieces, never splitting a UTF-8 sequence. */
  streamDecoder(options: DecodeOptions = {}): StreamDecoder {
    return new StreamDecoder(this, options);
  }
}

/**
 * Incremental detokenizer: `push(id)` returns the new text since the last call. Text that would end in
 * an incomplete UTF-8 sequence (decoded as U+FFFD) is held back until the next tokens complete it.
 */
export class StreamDecoder {
  private ids: number[] = [];
  private prefix = 0;
  private read = 0;
  /** @param tok the tokenizer; @param options decode options. */
  constructor(
    private readonly tok: Tokenizer,
    private readonly options: DecodeOptions = {},
  ) {}
  /** Adds one id and returns the text it completes (possibly ""). */
  push(id: number): string {
    this.ids.push(id);
    // Decode from one token back (TGI's prefix/read offsets) so decoders that strip a leading space agree.
    const before = this.tok.decode(this.ids.slice(this.prefix, this.read), this.options);
    const after = this.tok.decode(this.ids.slice(this.prefix), this.options);
    if (after.length > before.length && !after.endsWith("\uFFFD")) {
      const text = after.slice(before.length);
      this.prefix = this.read;
      this.read = this.ids.length;
      return text;
    }
    return "";
  }
  /** Returns any text still held back (e.g. a truly invalid byte sequence at the end). */
  flush(): string {
    const before = this.tok.decode(this.ids.slice(this.prefix, this.read), this.options);
    const after = this.tok.decode(this.ids.slice(this.prefix), this.options);
    this.prefix = this.read = this.ids.length;
    return after.slice(before.length);
  }
}
