// Last uses of the names a block declares, for targets that reuse registers once a value is dead (Wasm locals,
// decision 2490). Names are unique per kernel (no shadowing), so a name's last use in its declaring block is the
// last statement of that block that mentions it anywhere, nested blocks included: after that statement it is dead.

import type { Stmt, ValueType } from "@poot/kernel-dsl";
import { stmtExprs, walkExpr, walkStmts } from "./prepare.js";

/**
 * Register reuse a target may offer the driver: temporaries are freed after each statement, a `let`'s value is held
 * until its last use, a variable's register is dropped when its scope ends.
 */
export interface RegLifetimes<V> {
  /** The point to free temporaries back to, taken before each statement. */
  mark(): number;
  /** Frees the temporaries made since `mark` that no `let` holds. */
  freeSince(mark: number): void;
  /** Keeps `v` (a `let`'s value) alive past its statement. */
  hold(v: V): void;
  /** Drops one {@link hold} of `v`: its `let` is dead. */
  drop(v: V): void;
  /** Variable `name` (a `var`, a loop variable) is dead: its register may be reused. */
  dropVar(name: string, type: ValueType): void;
}

/** The name statement `s` declares in its own block, if any (a private array lives in memory: none). */
function declares(s: Stmt): string | undefined {
  switch (s.s) {
    case "let":
    case "var":
    case "subgroup":
    case "mma":
      return s.name;
    case "atomic":
      return s.name;
    case "for":
      return s.var;
    default:
      return undefined;
  }
}

/**
 * For each statement of `body`, the names declared in `body` whose last use is that statement (a name never used
 * after its declaration ends at its declaration).
 */
export function lastUses(body: readonly Stmt[]): (string[] | undefined)[] {
  const declared = new Map<string, number>();
  body.forEach((s, i) => {
    const n = declares(s);
    if (n !== undefined) declared.set(n, i);
  });
  const ends: (string[] | undefined)[] = [];
  if (declared.size === 0) return ends;
  const last = new Map(declared);
  body.forEach((s, i) => {
    const use = (name: string): void => void (declared.has(name) && last.set(name, i));
    walkStmts([s], (st) => {
      if (st.s === "assign") use(st.name);
      for (const e of stmtExprs(st)) walkExpr(e, (x) => void (x.k === "local" && use(x.name)));
    });
  });
  for (const [name, i] of last) (ends[i] ??= []).push(name);
  return ends;
}
