// A WGSL text fix applied before compiling: non-finite f32 literals become run-time values, since Tint
// rejects `bitcast<f32>(0xff800000u)` as a const-expression that is not representable (-inf, inf, NaN).

const NON_FINITE: Readonly<Record<string, string>> = {
  "0x7f800000u": "poot_inf_bits",
  "0xff800000u": "poot_ninf_bits",
  "0x7fc00000u": "poot_nan_bits",
};

/**
 * Rewrites `bitcast<f32>(<inf|-inf|nan bits>)` to read a module-scope private u32 instead, which makes the
 * bitcast a run-time expression (same bits, no const-evaluation). Text without such literals is unchanged.
 */
export function runtimeNonFinite(text: string): string {
  const used = new Set<string>();
  const body = text.replace(/bitcast<f32>\((0x7f800000u|0xff800000u|0x7fc00000u)\)/g, (_, bits: string) => {
    used.add(bits);
    return `bitcast<f32>(${NON_FINITE[bits]!})`;
  });
  if (used.size === 0) return text;
  const decls = [...used].map((b) => `var<private> ${NON_FINITE[b]!}: u32 = ${b};`).join("\n");
  // Directives (`enable`, `requires`, `diagnostic`) must stay first in a WGSL module.
  const lines = body.split("\n");
  let at = 0;
  while (at < lines.length && /^\s*(enable|requires|diagnostic)\b/.test(lines[at]!)) at++;
  return [...lines.slice(0, at), decls, ...lines.slice(at)].join("\n");
}
