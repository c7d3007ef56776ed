// A BPE model's vocabulary and merges installed into an `@huggingface/tokenizers` BPE model from the arrays a GGUF
// header already holds, instead of through tokenizer.json's `vocab` object and merge list: the library would build a
// 128k-key object's entries, a Map from them, a pair array per merge and a JSON string per merge (280k for Llama 3),
// about 0.2-0.3 s of a `poot run` start (decision 1660). What the tables mean is the library's, unchanged.

/** A BPE model's vocabulary (id -> string, the first id of a repeated string wins) and merges, as arrays. */
export interface BpeTables {
  readonly tokens: readonly string[];
  /** Merges as `"a b"` strings (tokenizer.json's old format), ranked by position. */
  readonly merges: readonly string[];
}

/**
 * The part of an `@huggingface/tokenizers` Tokenizer read here, typed structurally: the library's own declarations do
 * not compile under `nodenext` with `skipLibCheck: false`, and this module's declarations ship to users.
 */
interface HFTokenizer {
  readonly model: unknown;
}

/** The fields of `@huggingface/tokenizers`' (0.2.0) BPE model that the tables replace. */
interface HFBpeModel {
  tokens_to_ids: Map<string, number>;
  vocab: (string | undefined)[];
  unk_token_id: number | undefined;
  unk_token: string | null | undefined;
  bpe_ranks: Map<string, number>;
  add_node: (queue: { push(n: unknown): void }, node: HFBpeNode) => void;
}
interface HFBpeNode {
  token: string;
  bias: number;
  score: number;
  next: { token: string };
}

/**
 * Whether `hf`'s model is the library's BPE model with the fields {@link installBpeTables} replaces (a library
 * version that renamed them builds from tokenizer.json instead).
 */
export function canInstallBpeTables(hf: HFTokenizer): boolean {
  const m = hf.model as unknown as Partial<HFBpeModel> | null;
  return (
    m !== null &&
    m.tokens_to_ids instanceof Map &&
    Array.isArray(m.vocab) &&
    m.bpe_ranks instanceof Map &&
    typeof m.add_node === "function"
  );
}

/**
 * Installs `tables` into `hf`, built from tokenizer.json `json` whose model's `vocab` is `{}` and `merges` `[]`: the
 * state is the one the library builds from the full vocabulary object and merge strings. Then the added tokens are
 * entered as the library's constructor entered them into the empty tables (same order, so a later one wins).
 */
export function installBpeTables(
  hf: HFTokenizer,
  tables: BpeTables,
  addedTokens: readonly { readonly id: number; readonly content: string }[],
): void {
  const m = hf.model as unknown as HFBpeModel;
  const { tokens, merges } = tables;
  const ids = new Map<string, number>();
  const vocab: (string | undefined)[] = new Array(tokens.length);
  let last = -1;
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i]!;
    if (ids.has(t)) continue;
    ids.set(t, i);
    vocab[i] = t;
    last = i;
  }
  // The library sizes its id -> string array by the distinct strings, then writes each string's id into it.
  vocab.length = Math.max(ids.size, last + 1);
  m.tokens_to_ids = ids;
  m.vocab = vocab;
  m.unk_token_id = m.unk_token == null ? undefined : ids.get(m.unk_token);
  // The library ranks the pair `m.split(" ", 2)` of each merge (the last of equal pairs wins) and looks a pair up
  // by its JSON text. Keyed by "a b" instead: a merge with one space is its own key (no new string); the parts of
  // a split never hold a space, so a looked-up pair containing one has two or more spaces and matches no key, as
  // its JSON text matched no merge's.
  const ranks = new Map<string, number>();
  for (let i = 0; i < merges.length; i++) {
    const s = merges[i]!;
    const sp = s.indexOf(" ");
    if (sp < 0) continue; // one part: the library's key is a one-element array, which no pair equals
    const next = s.indexOf(" ", sp + 1);
    ranks.set(next < 0 ? s : `${s.slice(0, sp)} ${s.slice(sp + 1, next)}`, i);
  }
  m.bpe_ranks = ranks;
  // The library's BPE.add_node with the "a b" key.
  m.add_node = (queue, node) => {
    const rank = ranks.get(`${node.token} ${node.next.token}`);
    if (rank !== undefined) {
      node.score = rank + node.bias;
      queue.push(node);
    }
  };
  for (const a of addedTokens) {
    ids.set(a.content, a.id);
    vocab[a.id] = a.content;
  }
}

/** tokenizer.json's `vocab` object of an id -> string array (the first id of a repeated string wins). */
export function vocabObject(tokens: readonly string[]): Record<string, number> {
  const vocab: Record<string, number> = {};
  tokens.forEach((t, i) => {
    if (!Object.hasOwn(vocab, t)) vocab[t] = i;
  });
  return vocab;
}

/** tokenizer.json `json` with its model's `vocab` object and `merges` filled from `tables` (what the library reads). */
export function withBpeTables(json: object, tables: BpeTables): object {
  const j = json as { model: object };
  return { ...j, model: { ...j.model, vocab: vocabObject(tables.tokens), merges: tables.merges } };
}
