// dce: an equation nobody reads (not an output or state_out) is removed, last-to-first so a dead chain
// goes in one sweep; the rule is shared by passes that leave absorbed equations behind (fusion, recognition).

import type { Pass, Rule } from "../rules.js";

/** Removes dead equations. */
export const deadEquation: Rule = {
  name: "dead-equation",
  ops: "*",
  apply: (_k, e, cx) => (cx.draft.useCount(e.out) === 0 ? { kind: "remove" } : null),
};

/** The DCE pass. */
export const dce: Pass = {
  name: "dce",
  numerics: "exact",
  doc: "remove equations nobody reads",
  rules: [deadEquation],
  reverse: true,
};
