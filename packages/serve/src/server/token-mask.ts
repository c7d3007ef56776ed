// The per-step token mask of grammar-constrained decoding: every token's text (computed once per tokenizer), run
// through the JSON automaton from the current states; a token is allowed when the automaton accepts all its
// characters and the document can still be completed in the tokens left (at most one token per character: every
// ASCII character is a token of its own in the tokenizers served). Masks are cached per state set and shared by
// every sequence of the same schema, so a schema's steady states cost one lookup.
import { JsonAutomaton, type JsonState } from "./json-automaton.js";
import type { JsonGrammar } from "./json-grammar.js";

/** The text each token adds to a decoded sequence (null: never allowed in constrained output). */
export class TokenTable {
  /** Code points of each token's text, or null. */
  readonly points: readonly (readonly string[] | null)[];

  /**
   * @param texts - each token's text as it appears inside a longer decoded sequence (special tokens, which decoding
   * drops, and tokens that are partial UTF-8, which decode to U+FFFD, as null or "").
   * @param eos - the end-of-sequence ids, allowed once the document is complete.
   */
  constructor(
    texts: readonly (string | null)[],
    readonly eos: readonly number[],
  ) {
    this.points = texts.map((t) => (t === null || t === "" || t.includes("\uFFFD") ? null : [...t]));
  }

  /**
   * The table of a tokenizer through `decode(ids)` (special tokens skipped, as streamed output is): each token's
   * text is what it adds after a plain one-letter token, so tokenizers that drop a leading space when a token is
   * decoded alone (SentencePiece) still give the text the token adds mid-sequence.
   */
  static of(vocabSize: number, decode: (ids: number[]) => string, eos: readonly number[]): TokenTable {
    // Ids past the tokenizer's own vocabulary (padded embedding rows) have no text.
    const raw = decode;
    decode = (ids: number[]): string => {
      try {
        return raw(ids);
      } catch {
        return "";
      }
    };
    let anchor = -1;
    for (let id = 0; id < vocabSize && anchor < 0; id++) if (/^[a-z]$/.test(decode([id]))) anchor = id;
    const base = anchor < 0 ? "" : decode([anchor]);
    const texts: (string | null)[] = [];
    for (let id = 0; id < vocabSize; id++) {
      if (eos.includes(id)) {
        texts.push(null);
        continue;
      }
      const alone = decode([id]);
      if (alone === "") {
        texts.push(null);
        continue;
      }
      const joined = anchor < 0 ? alone : decode([anchor, id]);
      texts.push(anchor >= 0 && joined.startsWith(base) ? joined.slice(base.length) : alone);
    }
    return new TokenTable(texts, eos);
  }
}

/** Tokens allowed from one state set: ids, the characters each leaves to complete the document, and whether it may end. */
interface MaskEntry {
  readonly ids: Int32Array;
  readonly mins: Float64Array;
  readonly accepting: boolean;
}

const CACHE_LIMIT = 50_000;

/** A compiled schema with its automaton and mask cache, shared by the sequences that use it. */
export class CompiledConstraint {
  /** The automaton over the schema. */
  readonly automaton: JsonAutomaton;
  private readonly cache = new Map<string, MaskEntry>();

  /**
   * @param grammar - the compiled schema.
   * @param table - the tokenizer's token texts.
   */
  constructor(
    readonly grammar: JsonGrammar,
    readonly table: TokenTable,
  ) {
    this.automaton = new JsonAutomaton(grammar);
  }

  /** The mask entry of a state set (computed on first use). */
  entry(states: readonly JsonState[]): MaskEntry {
    const key = states.map((s) => s?.key ?? "$").join("&");
    let e = this.cache.get(key);
    if (e === undefined) {
      e = this.compute(states);
      if (this.cache.size >= CACHE_LIMIT) this.cache.clear();
      this.cache.set(key, e);
    }
    return e;
  }

  private compute(states: readonly JsonState[]): MaskEntry {
    const a = this.automaton;
    const ids: number[] = [],
      mins: number[] = [];
    const points = this.table.points;
    for (let id = 0; id < points.length; id++) {
      const p = points[id];
      if (p === null || p === undefined) continue;
      const after = advance(a, states, p);
      if (after.length === 0) continue;
      ids.push(id);
      mins.push(Math.min(...after.map((s) => (a.accepting(s) ? 0 : (s?.min ?? 0)))));
    }
    return { ids: Int32Array.from(ids), mins: Float64Array.from(mins), accepting: states.some((s) => a.accepting(s)) };
  }
}

/** The states after the characters `chars` from `states` (deduplicated; empty when a character is refused). */
export function advance(a: JsonAutomaton, states: readonly JsonState[], chars: readonly string[]): JsonState[] {
  let cur: JsonState[] = [...states];
  for (const ch of chars) {
    const next: JsonState[] = [];
    for (const s of cur) a.step(s, ch, next);
    if (next.length === 0) return next;
    cur = dedupe(next);
  }
  return cur;
}

function dedupe(states: JsonState[]): JsonState[] {
  if (states.length < 2) return states;
  const seen = new Set<string>();
  return states.filter((s) => {
    const k = s?.key ?? "$";
    if (seen.has(k)) return false;
    seen.add(k);
    return true;
  });
}

/** One sequence's progress through a constraint: masks its logits before each sample and follows what it sampled. */
export class ConstrainedDecoder {
  private states: JsonState[];
  private readonly allowed: Float32Array;

  /** @param c - the compiled schema and token table. */
  constructor(readonly c: CompiledConstraint) {
    this.states = [c.automaton.start()];
    this.allowed = new Float32Array(c.table.points.length);
  }

  /** Whether the document is complete and nothing may follow. */
  get finished(): boolean {
    return this.states.every((s) => s === null);
  }

  /**
   * Sets to -Infinity the logit of every token the schema does not allow next, or that would leave more characters
   * to complete the document than the `left - 1` tokens that would remain; EOS stays allowed once it is complete.
   */
  mask(logits: Float32Array, left: number): void {
    const e = this.c.entry(this.states);
    const budget = left - 1;
    let n = 0;
    let cheapest = Infinity;
    for (let i = 0; i < e.ids.length; i++) cheapest = Math.min(cheapest, e.mins[i]!);
    // The budget always leaves a way (see the module comment); should it not, the cheapest tokens keep one open.
    const limit = e.accepting || cheapest <= budget ? budget : cheapest;
    const keep = this.allowed;
    for (let i = 0; i < e.ids.length; i++) if (e.mins[i]! <= limit) keep[n++] = e.ids[i]!;
    const saved = new Float32Array(n);
    for (let i = 0; i < n; i++) saved[i] = logits[keep[i]!]!;
    const eos = this.c.table.eos.map((id) => logits[id]!);
    logits.fill(-Infinity);
    for (let i = 0; i < n; i++) logits[keep[i]!] = saved[i]!;
    if (e.accepting) this.c.table.eos.forEach((id, i) => (logits[id] = eos[i]!));
  }

  /** Follows a sampled token (EOS ends the document; its text is nothing). */
  accept(id: number): void {
    if (this.c.table.eos.includes(id)) return;
    const p = this.c.table.points[id];
    const next = p === null || p === undefined ? [] : advance(this.c.automaton, this.states, p);
    // A token the mask allowed always advances; anything else is a bug that must not pass silently.
    if (next.length === 0) throw new Error(`constrained decoding: token ${id} does not fit the schema`);
    this.states = next;
  }
}
