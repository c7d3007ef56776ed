// The blocking of a block contraction (block-contraction.ts): which accumulator elements its epilogue reads for each
// output element, derived from the epilogue's index expressions, so that one workgroup can hold a block of outputs.

import { numel } from "@poot/graph-ir";
import type { Access, Region, RegionArg, RegionNode } from "@poot/graph-plan";

/** Region ops evaluated at the same coordinates in every operand (operands of the node's shape keep positions). */
const POINTWISE = new Set([
  "Add",
  "Sub",
  "Mul",
  "Div",
  "Max",
  "Min",
  "Pow",
  "And",
  "Or",
  "Xor",
  "Shl",
  "Shr",
  "Eq",
  "Ne",
  "Lt",
  "Le",
  "Gt",
  "Ge",
  "Neg",
  "Exp",
  "Log",
  "Sqrt",
  "Recip",
  "Tanh",
  "Erf",
  "Sin",
  "Cos",
  "Abs",
  "Not",
  "Select",
  "Cast",
]);

const gcd = (a: number, b: number): number => (b === 0 ? a : gcd(b, a % b));
const lcm = (a: number, b: number): number => (a / gcd(a, b)) * b;

/** How the epilogue maps onto the accumulator: the iteration space and the block granule. */
export interface EpilogueBlocking {
  /** Shape iterated per output element (the output, or the update window of an in-place cache write). */
  readonly space: readonly number[];
  /** The in-place DynamicUpdateSlice result node, when the region writes only a window of the output. */
  readonly update?: RegionNode;
  /**
   * Element i of `space` (row-major) reads the accumulators only at linear indices of the same aligned run of
   * `granule` elements as i (e.g. a head of D for RoPE, 1 for a pure layout change).
   */
  readonly granule: number;
}

/**
 * Derives the blocking of a contraction epilogue from its index expressions: every node on a path from an
 * accumulator to the result must keep the row-major element order (reshapes, transposes that permute only size-1
 * axes, pointwise ops over operands of their own shape, an in-place update window) or read within an aligned run
 * (RoPE: its last axis). Null when the reads are not bounded that way (slices, gathers, concats, reductions,
 * broadcasts of the accumulator): the caller keeps the inline form.
 */
export function epilogueBlocking(
  region: Region,
  heads: number,
  accShape: readonly number[],
  extras: readonly Access[],
  output: Access,
): EpilogueBlocking | null {
  const nodes = region.nodes;
  const dep = nodes.map(() => false);
  const argDep = (a: RegionArg): boolean => ("in" in a ? a.in < heads : "node" in a ? (dep[a.node] as boolean) : false);
  nodes.forEach((n, i) => {
    dep[i] = n.args.some(argDep);
  });
  const shapeOf = (a: RegionArg): readonly number[] =>
    "in" in a
      ? a.in < heads
        ? accShape
        : ((extras[a.in - heads] as Access | undefined)?.shape ?? [])
      : "node" in a
        ? (nodes[a.node] as RegionNode).shape
        : [];
  const same = (x: readonly number[], y: readonly number[]) => x.length === y.length && x.every((d, i) => d === y[i]);
  const walk = (a: RegionArg): number | null => {
    if (!("node" in a) || !argDep(a)) return 1;
    const n = nodes[a.node] as RegionNode;
    const args = n.args as readonly RegionArg[];
    switch (n.op) {
      case "Reshape":
        return walk(args[0] as RegionArg);
      case "Transpose": {
        const inShape = shapeOf(args[0] as RegionArg);
        const kept = (n.params as { perm: number[] }).perm.filter((s) => (inShape[s] as number) > 1);
        return kept.every((s, i) => i === 0 || s > (kept[i - 1] as number)) ? walk(args[0] as RegionArg) : null;
      }
      case "Rope": {
        if (
          !["half", "interleaved"].includes((n.params as { style?: string }).style ?? "") ||
          args.slice(1).some(argDep) ||
          !same(shapeOf(args[0] as RegionArg), n.shape)
        )
          return null;
        const g = walk(args[0] as RegionArg);
        return g === null ? null : lcm(g, n.shape[n.shape.length - 1] as number);
      }
      default: {
        if (!POINTWISE.has(n.op)) return null;
        let g = 1;
        for (const x of args) {
          if (!argDep(x)) continue;
          if (!same(shapeOf(x), n.shape)) return null;
          const gx = walk(x);
          if (gx === null) return null;
          g = lcm(g, gx);
        }
        return g;
      }
    }
  };
  const total = numel(accShape);
  const res = nodes[region.result] as RegionNode;
  const x = res.args[0] as RegionArg | undefined;
  const target = x !== undefined && "in" in x && x.in >= heads ? extras[x.in - heads] : undefined;
  const inPlace =
    res.op === "DynamicUpdateSlice" &&
    target !== undefined &&
    target.root === output.root &&
    target.offset === output.offset &&
    target.strides.every((s, d) => s === output.strides[d]);
  if (inPlace) {
    const upd = res.args[1] as RegionArg;
    if (res.args.some((a, i) => i !== 1 && argDep(a)) || numel(shapeOf(upd)) !== total) return null;
    const g = walk(upd);
    return g === null ? null : { space: shapeOf(upd), update: res, granule: g };
  }
  if (numel(res.shape) !== total || !same(res.shape, output.shape)) return null;
  const g = walk({ node: region.result });
  return g === null ? null : { space: output.shape, granule: g };
}
