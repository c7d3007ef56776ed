// Grammar-constrained JSON, part two: a character-level pushdown automaton over a compiled JsonGrammar whose states
// are immutable stacks (so one state is shared by every branch that reaches it, and a set of states stands for the
// alternatives of anyOf). Every state knows the fewest characters that complete a valid document from it, which is
// what lets the token mask (token-mask.ts) close the document before max_tokens runs out.
import type { JsonGrammar, JsonNode } from "./json-grammar.js";

/** Longest integer and fraction digit runs, and exponent digits, a number may have (so it parses to a finite value). */
const INT_DIGITS = 15,
  FRAC_DIGITS = 15,
  EXP_DIGITS = 2;

/** Number phases: after `-`, a leading 0, integer digits, `.`, fraction digits, `e`, the exponent's sign, its digits. */
type NumPhase = "sign" | "zero" | "int" | "dot" | "frac" | "e" | "esign" | "exp";

/** What the automaton expects next, innermost first. */
type Frame =
  | { readonly f: "val"; readonly node: JsonNode }
  | { readonly f: "lit"; readonly s: string; readonly i: number }
  | { readonly f: "str"; readonly node: Extract<JsonNode, { k: "string" }>; readonly n: number; readonly esc: boolean }
  | {
      readonly f: "num";
      readonly node: Extract<JsonNode, { k: "number" }>;
      readonly ph: NumPhase;
      readonly d: number;
    }
  | { readonly f: "arr"; readonly node: Extract<JsonNode, { k: "array" }>; readonly n: number; readonly ph: 0 | 1 | 2 }
  | { readonly f: "obj"; readonly node: Extract<JsonNode, { k: "object" }>; readonly i: number; readonly ph: 0 | 1 | 2 }
  | { readonly f: "map"; readonly node: Extract<JsonNode, { k: "map" }>; readonly ph: 0 | 1 | 2 };

/** An automaton state: a stack of frames (null: the document is complete and nothing may follow). */
export type JsonState = {
  readonly fr: Frame;
  readonly up: JsonState;
  /** Fewest characters that complete the document from here. */
  readonly min: number;
  /** Identifies the state (equal keys: equal futures). */
  readonly key: string;
} | null;

const PLAIN_KEY: Extract<JsonNode, { k: "string" }> = { k: "string", id: -1, min: 0, max: null };
const TERMINAL: ReadonlySet<NumPhase> = new Set(["zero", "int", "frac", "exp"]);
const ESCAPES = new Set(['"', "\\", "/", "b", "f", "n", "r", "t"]);

/** The automaton over a {@link JsonGrammar}: start state, transitions, completion. */
export class JsonAutomaton {
  /** @param g - the compiled schema. */
  constructor(readonly g: JsonGrammar) {}

  /** The state before the first character. */
  start(): JsonState {
    return this.push(null, { f: "val", node: this.g.root });
  }

  /** Whether the document may end in `s` (complete, or a number that could also go on). */
  accepting(s: JsonState): boolean {
    for (let t = s; ; t = t.up) {
      if (t === null) return true;
      if (t.fr.f !== "num" || !TERMINAL.has(t.fr.ph)) return false;
    }
  }

  private frameMin(fr: Frame): number {
    const g = this.g;
    switch (fr.f) {
      case "val":
        return g.minLength(fr.node);
      case "lit":
        return fr.s.length - fr.i;
      case "str":
        return 1 + Math.max(0, fr.node.min - fr.n) + (fr.esc ? 1 : 0);
      case "num":
        return TERMINAL.has(fr.ph) ? 0 : 1;
      case "arr": {
        const m = g.minLength(fr.node.items),
          min = fr.node.min;
        if (fr.ph === 0) return min === 0 ? 1 : min * m + min - 1 + 1;
        if (fr.ph === 1) return Math.max(0, min - fr.n) * (1 + m) + 1;
        return m + Math.max(0, min - fr.n - 1) * (1 + m) + 1;
      }
      case "obj": {
        const node = fr.node;
        if (fr.ph === 1) return g.requiredCost(node, fr.i, true) + 1;
        if (fr.ph === 0 || node.req[fr.i]! < node.props.length) return g.requiredCost(node, fr.i, false) + 1;
        // After a comma with only optional members left: the cheapest of them.
        let best = Infinity;
        for (let j = fr.i; j < node.props.length; j++)
          best = Math.min(best, node.props[j]!.head.length + g.minLength(node.props[j]!.node));
        return best + 1;
      }
      case "map":
        return fr.ph === 2 ? 3 + g.minLength(fr.node.values) + 1 : 1;
    }
  }

  private frameKey(fr: Frame): string {
    switch (fr.f) {
      case "val":
        return `v${fr.node.id}`;
      case "lit":
        return `l${fr.i}${JSON.stringify(fr.s)}`;
      case "str":
        return `s${fr.node.id}.${fr.n}${fr.esc ? "e" : ""}`;
      case "num":
        return `n${fr.node.id}.${fr.ph}${fr.d}`;
      case "arr":
        return `a${fr.node.id}.${fr.n}.${fr.ph}`;
      case "obj":
        return `o${fr.node.id}.${fr.i}.${fr.ph}`;
      case "map":
        return `m${fr.node.id}.${fr.ph}`;
    }
  }

  private push(up: JsonState, fr: Frame): JsonState {
    return { fr, up, min: this.frameMin(fr) + (up?.min ?? 0), key: `${this.frameKey(fr)}/${up?.key ?? ""}` };
  }

  /** The states after `ch` (one code point) from `s`, appended to `out` (none: `ch` is not allowed). */
  step(s: JsonState, ch: string, out: JsonState[]): void {
    if (s === null) return;
    const fr = s.fr,
      up = s.up;
    switch (fr.f) {
      case "val":
        this.begin(fr.node, ch, up, out);
        return;
      case "lit":
        if (fr.s[fr.i] === ch) out.push(fr.i + 1 === fr.s.length ? up : this.push(up, { ...fr, i: fr.i + 1 }));
        return;
      case "str":
        this.string(fr, ch, up, out);
        return;
      case "num":
        this.number(fr, ch, up, out);
        return;
      case "arr":
        this.array(fr, ch, up, out);
        return;
      case "obj":
        this.object(fr, ch, up, out);
        return;
      case "map":
        this.map(fr, ch, up, out);
        return;
    }
  }

  private begin(node: JsonNode, ch: string, up: JsonState, out: JsonState[]): void {
    switch (node.k) {
      case "union":
        for (const o of node.options) this.begin(o, ch, up, out);
        return;
      case "string":
        if (ch === '"') out.push(this.push(up, { f: "str", node, n: 0, esc: false }));
        return;
      case "lit":
        for (const v of node.values)
          if (v[0] === ch) out.push(v.length === 1 ? up : this.push(up, { f: "lit", s: v, i: 1 }));
        return;
      case "number":
        if (ch === "-" && node.neg) out.push(this.push(up, { f: "num", node, ph: "sign", d: 0 }));
        else if (ch === "0" && node.zero) out.push(this.push(up, { f: "num", node, ph: "zero", d: 1 }));
        else if (ch >= "1" && ch <= "9") out.push(this.push(up, { f: "num", node, ph: "int", d: 1 }));
        return;
      case "array":
        if (ch === "[") out.push(this.push(up, { f: "arr", node, n: 0, ph: 0 }));
        return;
      case "object":
        if (ch === "{") out.push(this.push(up, { f: "obj", node, i: 0, ph: 0 }));
        return;
      case "map":
        if (ch === "{") out.push(this.push(up, { f: "map", node, ph: 0 }));
        return;
    }
  }

  private string(fr: Extract<Frame, { f: "str" }>, ch: string, up: JsonState, out: JsonState[]): void {
    const { node } = fr;
    // Counting matters only under length bounds; unbounded strings keep n at 0 so their states coincide.
    const counted = node.min > 0 || node.max !== null;
    const room = node.max === null || fr.n < node.max;
    const next = (): JsonState => this.push(up, { ...fr, n: counted ? fr.n + 1 : 0, esc: false });
    if (fr.esc) {
      if (ESCAPES.has(ch)) out.push(next());
      return;
    }
    if (ch === '"') {
      if (fr.n >= node.min) out.push(up);
      return;
    }
    if (!room) return;
    if (ch === "\\") out.push(this.push(up, { ...fr, esc: true }));
    else if (ch.codePointAt(0)! >= 0x20) out.push(next());
  }

  private number(fr: Extract<Frame, { f: "num" }>, ch: string, up: JsonState, out: JsonState[]): void {
    const digit = ch >= "0" && ch <= "9";
    const go = (ph: NumPhase, d: number): void => void out.push(this.push(up, { ...fr, ph, d }));
    const int = fr.node.int;
    switch (fr.ph) {
      case "sign":
        if (ch === "0" && fr.node.zero) go("zero", 1);
        else if (digit && ch !== "0") go("int", 1);
        return;
      case "dot":
        if (digit) go("frac", 1);
        return;
      case "e":
        if (ch === "+" || ch === "-") go("esign", 0);
        else if (digit) go("exp", 1);
        return;
      case "esign":
        if (digit) go("exp", 1);
        return;
      default:
        break;
    }
    // A terminal phase: the number may go on, or end and hand the character to what follows it.
    if (digit && fr.ph === "int" && fr.d < INT_DIGITS) return go("int", fr.d + 1);
    if (digit && fr.ph === "frac" && fr.d < FRAC_DIGITS) return go("frac", fr.d + 1);
    if (digit && fr.ph === "exp" && fr.d < EXP_DIGITS) return go("exp", fr.d + 1);
    if (!int && ch === "." && (fr.ph === "zero" || fr.ph === "int")) return go("dot", 0);
    if (!int && (ch === "e" || ch === "E") && fr.ph !== "exp") return go("e", 0);
    if (!digit) this.step(up, ch, out);
  }

  private array(fr: Extract<Frame, { f: "arr" }>, ch: string, up: JsonState, out: JsonState[]): void {
    const { node } = fr;
    // Past minItems (and without maxItems) the count no longer matters: clamp it so states coincide.
    const count = (n: number): number => (node.max === null ? Math.min(n, node.min) : n);
    if (fr.ph === 1) {
      if (ch === "," && (node.max === null || fr.n < node.max)) out.push(this.push(up, { ...fr, ph: 2 }));
      else if (ch === "]" && fr.n >= node.min) out.push(up);
      return;
    }
    if (fr.ph === 0 && ch === "]") {
      if (node.min === 0) out.push(up);
      return;
    }
    if (fr.ph === 0 && node.max === 0) return;
    this.begin(node.items, ch, this.push(up, { f: "arr", node, n: count(fr.n + 1), ph: 1 }), out);
  }

  private object(fr: Extract<Frame, { f: "obj" }>, ch: string, up: JsonState, out: JsonState[]): void {
    const { node } = fr;
    const done = node.req[fr.i]! >= node.props.length;
    if (fr.ph === 1) {
      if (ch === "," && fr.i < node.props.length) out.push(this.push(up, { ...fr, ph: 2 }));
      else if (ch === "}" && done) out.push(up);
      return;
    }
    if (ch === "}") {
      if (fr.ph === 0 && done) out.push(up);
      return;
    }
    // The next member: any property from i up to and including the first required one.
    const last = Math.min(node.req[fr.i]!, node.props.length - 1);
    for (let j = fr.i; j <= last; j++) {
      const p = node.props[j]!;
      if (p.head[0] !== ch) continue;
      const after = this.push(up, { f: "obj", node, i: j + 1, ph: 1 });
      out.push(this.push(this.push(after, { f: "val", node: p.node }), { f: "lit", s: p.head, i: 1 }));
    }
  }

  private map(fr: Extract<Frame, { f: "map" }>, ch: string, up: JsonState, out: JsonState[]): void {
    if (fr.ph === 1) {
      if (ch === ",") out.push(this.push(up, { ...fr, ph: 2 }));
      else if (ch === "}") out.push(up);
      return;
    }
    if (ch === "}" && fr.ph === 0) out.push(up);
    else if (ch === '"') {
      const after = this.push(up, { f: "map", node: fr.node, ph: 1 });
      const value = this.push(this.push(after, { f: "val", node: fr.node.values }), { f: "lit", s: ":", i: 0 });
      out.push(this.push(value, { f: "str", node: PLAIN_KEY, n: 0, esc: false }));
    }
  }
}
