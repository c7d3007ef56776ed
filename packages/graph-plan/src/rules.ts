// Passes as rule tables (CONVENTIONS 5): a pass is a list of (pattern, rewrite) rules plus a numerics
// declaration; one driver applies them over the draft until nothing matches.

import type { Eqn, ValueId } from "@poot/graph-ir";
import type { Draft } from "./draft.js";
import type { ResolvedOptions } from "./options.js";
import type { Target } from "./target.js";

/** What a pass promises about numerics: bit-exact, or rewrites that could change rounding are declined unless proved exact. */
export type PassNumerics = "exact" | "declined-unless-proved";

/** A chain that nearly matched a recognizer, with the first check it failed. */
export interface Decline {
  /** Which recognizer. */
  readonly pattern: "rope" | "attention" | "experts" | "horizontal";
  /** The root value of the chain (a source-graph value id). */
  readonly value: ValueId;
  /** Its debug name, when it has one. */
  readonly name?: string;
  /** The first failed check. */
  readonly check: string;
  /** Why it failed. */
  readonly detail: string;
}

/** Typed reasons a rewrite was declined on numerical grounds. */
export type NumericalReason =
  /** x + 0 -> x would turn -0 into +0's result differently. */
  | "signed-zero"
  /** x / c -> x * (1/c) is exact only when c is a power of two. */
  | "inexact-reciprocal"
  /** A narrowing cast (f32 -> f16/bf16) rounds; it cannot be folded away. */
  | "narrowing-cast"
  /** A recognized chain computes in a narrow dtype that the composite does not replay. */
  | "narrow-compute"
  /** Contractions joined in one dispatch would read A or their weights differently, or round their accumulators differently. */
  | "read-differs";

/** A rewrite declined because it could change rounding or arithmetic order. */
export interface NumericalDecline {
  /** The pass. */
  readonly pass: PassName;
  /** The rule. */
  readonly rule: string;
  /** The value the rewrite would have changed (a source-graph value id). */
  readonly value: ValueId;
  /** Typed reason. */
  readonly reason: NumericalReason;
  /** Human detail. */
  readonly detail: string;
}

/** Names of the passes, in their fixed order. */
export type PassName =
  | "canonicalize"
  | "cse"
  | "iota-folding"
  | "rope-attention"
  | "dce"
  | "packed"
  | "legalize"
  | "dense-bf16"
  | "routed-experts"
  | "reduction-prep"
  | "fusion"
  | "tiling"
  | "flash-regions"
  | "horizontal-groups";

/** What a rule asks the driver to do to the equation it matched. */
export type Rewrite =
  /** Replace the equation by one defining the same value; `before` are new equations placed ahead of it. */
  | { readonly kind: "replace"; readonly eqn: Eqn; readonly before?: readonly Eqn[] }
  /** Every reader of the equation's value reads `to` instead; the equation is removed. */
  | { readonly kind: "forward"; readonly to: ValueId }
  /** Remove the equation (its value is dead, or the rule turned it into a Computed constant). */
  | { readonly kind: "remove" };

/** Context rules receive. */
export interface RuleContext {
  /** The graph under rewriting. */
  readonly draft: Draft;
  /** The compile target. */
  readonly target: Target;
  /** Resolved compile options. */
  readonly options: ResolvedOptions;
  /** Per-sweep scratch state (CSE's table of equations seen in this sweep). */
  readonly scratch: Map<string, unknown>;
  /** Scratch state kept for the whole pass (hashes of computed constants). */
  readonly passScratch: Map<string, unknown>;
  /** Records a near-match. */
  decline(d: Decline): void;
  /** Records a numerically declined rewrite. */
  numericalDecline(rule: string, value: ValueId, reason: NumericalReason, detail: string): void;
}

/** One (pattern, rewrite) pair: `ops` filters root ops ("*" for any). */
export interface Rule {
  /** Rule name (for reports). */
  readonly name: string;
  /** Root ops this rule looks at. */
  readonly ops: readonly string[] | "*";
  /** Returns a rewrite, or null when the pattern does not match. */
  apply(k: number, e: Eqn, cx: RuleContext): Rewrite | null;
}

/** A pass: rules, a numerics declaration, and the direction the driver walks. */
export interface Pass {
  /** Name (fixed order in the pipeline). */
  readonly name: PassName;
  /** Numerics declaration. */
  readonly numerics: PassNumerics;
  /** One line on what it does. */
  readonly doc: string;
  /** Rules, tried in order on each equation. */
  readonly rules: readonly Rule[];
  /** Walk roots last-to-first (fusion grows regions from their consumers). */
  readonly reverse?: boolean;
}

/** What running a pass did. */
export interface PassReport {
  /** Pass name. */
  readonly name: PassName;
  /** Its numerics declaration. */
  readonly numerics: PassNumerics;
  /** Equations before and after. */
  readonly eqnsBefore: number;
  /** Equations after. */
  readonly eqnsAfter: number;
  /** Rewrites applied, by rule name. */
  readonly rewrites: { readonly [rule: string]: number };
  /** Wall time of the pass in milliseconds. */
  readonly ms: number;
}

const MAX_SWEEPS = 16;

/** Applies a pass's rules until a sweep changes nothing. */
export function runPass(
  pass: Pass,
  cx: Omit<RuleContext, "scratch" | "passScratch" | "numericalDecline"> & { numericalDeclines: NumericalDecline[] },
): PassReport {
  const d = cx.draft;
  const t0 = performance.now();
  const before = d.eqnCount();
  const rewrites: Record<string, number> = {};
  const seen = new Set<string>();
  const ctx: RuleContext = {
    draft: d,
    target: cx.target,
    options: cx.options,
    scratch: new Map(),
    passScratch: new Map(),
    decline: cx.decline,
    numericalDecline(rule, value, reason, detail) {
      // One report per (rule, value) even though sweeps revisit the equation.
      const key = `${rule}:${value}`;
      if (seen.has(key)) return;
      seen.add(key);
      cx.numericalDeclines.push({ pass: pass.name, rule, value, reason, detail });
    },
  };
  for (let sweep = 0; sweep < MAX_SWEEPS; sweep++) {
    let changed = false;
    ctx.scratch.clear();
    const n = d.eqns.length;
    for (let i = 0; i < n; i++) {
      const k = pass.reverse ? n - 1 - i : i;
      const e = d.eqns[k];
      if (e === null || e === undefined) continue;
      for (const rule of pass.rules) {
        if (rule.ops !== "*" && !rule.ops.includes(e.op)) continue;
        const r = rule.apply(k, e, ctx);
        if (r === null) continue;
        apply(d, k, e, r);
        rewrites[rule.name] = (rewrites[rule.name] ?? 0) + 1;
        changed = true;
        break;
      }
    }
    d.compact();
    if (!changed) break;
  }
  return {
    name: pass.name,
    numerics: pass.numerics,
    eqnsBefore: before,
    eqnsAfter: d.eqnCount(),
    rewrites,
    ms: performance.now() - t0,
  };
}

function apply(d: Draft, k: number, e: Eqn, r: Rewrite): void {
  switch (r.kind) {
    case "replace":
      for (const b of r.before ?? []) d.insertBefore(k, b);
      d.replace(k, r.eqn);
      return;
    case "forward":
      d.remove(k);
      d.forward(e.out, r.to);
      return;
    case "remove":
      d.remove(k);
      return;
    default:
      r satisfies never;
  }
}
