// The iteration of a region kernel: its output, or only the update windows when the region's result is an in-place
// DynamicUpdateSlice chain of an input aliasing the output (a paged KV write), and region argument shapes.

import { numel } from "@poot/graph-ir";
import type { Access, Region, RegionArg, RegionNode } from "@poot/graph-plan";
import type { RegionSource } from "./region-kernels.js";

/**
 * The in-place DynamicUpdateSlice chain a region's result ends, first write first: `dus₁(x, u₁, …)`, `dus₂(dus₁, u₂,
 * …)`, … of an input `x` aliasing the output, each intermediate read only by the next (a paged KV write, one token per
 * update), so the kernel writes only the windows. Several updates need windows of one shape spanning each axis whole
 * or by one element, so two windows meet only at the same window element (one thread writes both, in order).
 * Empty when the result is no such chain.
 */
function inPlaceUpdates(region: Region, src: RegionSource, output: Access): readonly RegionNode[] {
  const chain: number[] = [];
  for (let at = region.result; ; ) {
    const r = region.nodes[at] as RegionNode;
    if (r.op !== "DynamicUpdateSlice") return [];
    chain.unshift(at);
    const x = r.args[0] as RegionArg;
    if ("node" in x) {
      at = x.node;
      continue;
    }
    const a = "in" in x ? src.access(x.in) : undefined;
    const same =
      a !== undefined &&
      a.root === output.root &&
      a.offset === output.offset &&
      a.strides.every((s, d) => s === output.strides[d]);
    if (!same) return [];
    break;
  }
  const links = new Set(chain);
  // Nothing but the next write reads a chain value (the updates and starts are computed without the chain).
  const linked = region.nodes.every((n, i) =>
    n.args.every((a, j) => !("node" in a) || !links.has(a.node) || (j === 0 && links.has(i))),
  );
  const updates = chain.map((i) => region.nodes[i] as RegionNode);
  if (!linked) return [];
  if (updates.length === 1) return updates;
  const win = argShape(region, src, updates[0]!.args[1] as RegionArg);
  const apart =
    updates.every((u) => argShape(region, src, u.args[1] as RegionArg).every((n, d) => n === win[d])) &&
    win.every((n, d) => n === 1 || n === output.shape[d]);
  return apart ? updates : [];
}

/** The shape of a region argument: an input's (from `src`), a node's, or a scalar constant's []. */
export function argShape(region: Region, src: RegionSource, a: RegionArg): readonly number[] {
  if ("in" in a) return src.shapes[a.in] as readonly number[];
  if ("node" in a) return (region.nodes[a.node] as RegionNode).shape;
  return [];
}

/** The iteration of a region kernel: the output, or the update window of an in-place cache write. */
export interface RegionSpace {
  /** The in-place DynamicUpdateSlice chain the result ends, first write first, when only its windows are written. */
  readonly updates: readonly RegionNode[];
  /** Shape iterated, one thread per element. */
  readonly space: readonly number[];
  /** Elements of `space` (at least 1). */
  readonly total: number;
}

/** The elements a region kernel iterates (one thread each). */
export function regionSpace(region: Region, src: RegionSource, output: Access): RegionSpace {
  const updates = inPlaceUpdates(region, src, output);
  const space = updates.length === 0 ? output.shape : argShape(region, src, updates[0]!.args[1] as RegionArg);
  return { updates, space, total: Math.max(1, numel(space)) };
}
