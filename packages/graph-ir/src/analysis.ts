// Static analysis of an unfused graph: how many kernels an executor launches (views cost nothing)
// and the peak bytes of live Device buffers under a def-to-last-use liveness model.

import { storageBytes } from "./dtype.js";
import { isLiteral, type Graph } from "./graph.js";
import { PRIMITIVE_OPS } from "./ops/table.js";
import type { OpTable } from "./ops/opdef.js";
import { numel } from "./shape.js";
import type { OpsOption } from "./validate.js";

/**
 * Dispatches an unfused executor launches: one per equation, except ops whose definition says `view`
 * (Reshape, Slice, Broadcast, Transpose), which an executor serves by aliasing or strided reads.
 */
export function dispatchCount(g: Graph, options: OpsOption = {}): number {
  const ops: OpTable = options.ops ?? PRIMITIVE_OPS;
  return g.eqns.filter((e) => ops[e.op]?.view !== true).length;
}

/**
 * Peak bytes of simultaneously live Device buffers. A non-view equation allocates its output when it
 * runs; a view aliases its input's buffer (0 bytes) and extends that buffer's life. A buffer lives from
 * its equation to the last equation reading it or any alias; graph outputs and state_outs live to the end.
 */
export function peakTransientBytes(g: Graph, options: OpsOption = {}): number {
  const ops: OpTable = options.ops ?? PRIMITIVE_OPS;
  const root = g.values.map((v) => v.id);
  const defAt = new Int32Array(g.values.length).fill(-1);
  const lastUse = new Int32Array(g.values.length).fill(-1);
  g.eqns.forEach((e, k) => {
    const first = e.inputs[0];
    // A view of a Device buffer shares it; a view of a Const/Slot/State needs no transient memory either.
    if (ops[e.op]?.view === true && first !== undefined && !isLiteral(first)) root[e.out] = root[first]!;
    else defAt[e.out] = k;
    for (const o of e.inputs) if (!isLiteral(o)) lastUse[root[o]!] = k;
  });
  const end = g.eqns.length;
  for (const o of g.outputs) lastUse[root[o.value]!] = end;
  for (const s of g.states) lastUse[root[s.output]!] = end;
  const delta = new Float64Array(end + 2);
  g.values.forEach((v, id) => {
    if (v.storage.kind !== "device" || root[id] !== id || defAt[id] === -1) return;
    const bytes = storageBytes(v.dtype, numel(v.shape));
    delta[defAt[id]!] = delta[defAt[id]!]! + bytes;
    const free = Math.max(lastUse[id]!, defAt[id]!) + 1;
    delta[free] = delta[free]! - bytes;
  });
  let live = 0,
    peak = 0;
  for (let k = 0; k <= end; k++) {
    live += delta[k]!;
    peak = Math.max(peak, live);
  }
  return peak;
}
