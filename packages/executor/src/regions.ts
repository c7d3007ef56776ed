// Where graph outputs and state_outs live in their root buffers, as byte regions to copy in row-major order:
// a view (transpose, broadcast, slice) aliases its root without being its dense prefix, so it is gathered.

import type { OutputData } from "./contract.js";
import { elementBytes, type OutputSpec } from "./schema.js";
import { outputOf } from "./storage.js";
import { viewLayout, viewRuns } from "./views.js";
import type { Graph, ScalarDType, ValueId } from "@poot/graph-ir";

/** One contiguous copy: bytes at `srcOffset` of the root buffer go to `dstOffset` of the dense destination. */
export interface ByteRegion {
  readonly srcOffset: number;
  readonly dstOffset: number;
  readonly bytes: number;
}

/** The regions of root `root`'s buffer that, copied in order, hold value `v` densely. */
export function viewRegions(g: Graph, v: ValueId, root: ValueId): ByteRegion[] {
  const eb = elementBytes(g.values[v]!.dtype as ScalarDType);
  let at = 0;
  return viewRuns(viewLayout(g, v, root)).map(([off, n]) => {
    const r = { srcOffset: off * eb, dstOffset: at * eb, bytes: n * eb };
    at += n;
    return r;
  });
}

/** A state_out computed outside its State buffer: copied into it after each step (donation). */
export interface StateCopy {
  readonly key: string;
  /** Root value holding the state_out (a view of it when the state_out is strided). */
  readonly from: ValueId;
  /** The state_in root (the State buffer). */
  readonly to: ValueId;
  readonly regions: readonly ByteRegion[];
}

/** The State copies of a step; state_outs written in place (same root as their state_in) need none. */
export function stateCopies(g: Graph, rootOf: (v: ValueId) => ValueId): StateCopy[] {
  const out: StateCopy[] = [];
  for (const s of g.states) {
    const from = rootOf(s.output),
      to = rootOf(s.input);
    if (from !== to) out.push({ key: s.key, from, to, regions: viewRegions(g, s.output, from) });
  }
  return out;
}

/** The bytes to read for an output: its one region, or the whole root buffer of a strided one. */
export function outputSpan(regions: readonly ByteRegion[], buf: { readonly bytes: number }): [number, number] {
  return regions.length === 1 ? [regions[0]!.srcOffset, regions[0]!.bytes] : [0, buf.bytes];
}

/** Host data of an output from what {@link outputSpan} read: a strided view's runs gathered in order. */
export function gatherOutput(
  spec: OutputSpec,
  regions: readonly ByteRegion[],
  data: Uint8Array,
  into?: OutputData,
): OutputData {
  if (regions.length === 1) return outputOf(spec.dtype, data, spec.size, into);
  const out = new Uint8Array(regions.reduce((a, r) => a + r.bytes, 0));
  for (const r of regions) out.set(data.subarray(r.srcOffset, r.srcOffset + r.bytes), r.dstOffset);
  return outputOf(spec.dtype, out, spec.size, into);
}
