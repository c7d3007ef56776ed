// The fixed pass order of DESIGN.md. Callers choose typed options (which may switch whole stages
// off), never their own list.

import type { ResolvedOptions } from "../options.js";
import type { Pass } from "../rules.js";
import { attentionRule } from "./attention.js";
import { canonicalize } from "./canonicalize.js";
import { cse } from "./cse.js";
import { dce, deadEquation } from "./dce.js";
import { routedExperts } from "./experts.js";
import { fusion } from "./fusion.js";
import { horizontalGroups } from "./horizontal.js";
import { iotaFolding } from "./iota.js";
import { denseBf16, legalize, packed, reductionPrep } from "./lowering.js";
import { ropeRule } from "./rope.js";
import { flashRegions, tiling } from "./schedule.js";

/** RoPE and attention recognition. */
export const ropeAttention: Pass = {
  name: "rope-attention",
  numerics: "exact",
  doc: "rotate-half and interleaved RoPE chains become Rope; softmax(QK^T)V chains become Attention (gated)",
  rules: [ropeRule, attentionRule],
};

/** Every pass in its fixed order. */
export const PIPELINE: readonly Pass[] = [
  canonicalize,
  cse,
  iotaFolding,
  ropeAttention,
  dce,
  packed,
  legalize,
  denseBf16,
  routedExperts,
  reductionPrep,
  fusion,
  tiling,
  flashRegions,
  horizontalGroups,
];

/** What a pass is, for reports and docs: its name, numerics declaration and one-line description. */
export interface PassInfo {
  /** Pass name. */
  readonly name: Pass["name"];
  /** Numerics declaration. */
  readonly numerics: Pass["numerics"];
  /** What it does. */
  readonly doc: string;
}

/** The fixed pass order with each pass's numerics declaration (the rules themselves stay internal). */
export const PASS_ORDER: readonly PassInfo[] = PIPELINE.map((p) => ({
  name: p.name,
  numerics: p.numerics,
  doc: p.doc,
}));

/** The passes options enable, in the fixed order. */
export function enabledPasses(o: ResolvedOptions): Pass[] {
  return PIPELINE.filter((p) => {
    switch (p.name) {
      case "rope-attention":
        return o.recognize;
      case "routed-experts":
        return o.recognize && o.routedExperts;
      case "fusion":
        return o.fusion;
      case "flash-regions":
        return o.fusion && o.recognize;
      case "horizontal-groups":
        return o.fusion && o.horizontalFusion === "grouped";
      default:
        return true;
    }
  });
}

export { deadEquation };
