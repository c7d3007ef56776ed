// The buffer plan: transient Device buffers share one arena by liveness (a buffer's bytes are reused
// once its last reader has run); views and in-place state writes alias their root's memory.

import { numel, storageBytes, type Graph, type ValueId } from "@poot/graph-ir";
import type { BufferAssignment, BufferPlan, Plan, SlotSpec } from "./types.js";

const align = (x: number, a: number): number => Math.ceil(x / a) * a;

/** Assigns arena offsets: largest buffers first, each at the lowest offset free during its lifetime. */
export function planBuffers(
  g: Graph,
  plans: readonly Plan[],
  roots: ReadonlyMap<ValueId, ValueId>,
  alignment: number,
): BufferPlan {
  const end = plans.length;
  const defAt = new Map<ValueId, number>();
  const last = new Map<ValueId, number>();
  // A horizontal group's dispatch (on its first member's plan) writes every member's value.
  let groupAt = -1;
  plans.forEach((p, i) => {
    const root = roots.get(p.out) ?? p.out;
    if (p.kernel.provenance !== "none" && p.kernel.request.group !== undefined) groupAt = i;
    const grouped = p.kernel.provenance === "none" && p.kernel.reason === "grouped";
    if (
      root === p.out &&
      (p.dispatches.length > 0 || grouped) &&
      p.phase === "step" &&
      g.values[p.out]!.storage.kind === "device"
    )
      defAt.set(p.out, grouped ? groupAt : i);
    for (const o of g.eqns[p.eqn]!.inputs) {
      if (typeof o !== "number") continue;
      const r = roots.get(o) ?? o;
      last.set(r, Math.max(last.get(r) ?? -1, i));
    }
  });
  for (const o of g.outputs) last.set(roots.get(o.value) ?? o.value, end);
  for (const s of g.states) last.set(roots.get(s.output) ?? s.output, end);
  const items = [...defAt.entries()].map(([v, d]) => {
    const val = g.values[v]!;
    return {
      value: v,
      bytes: align(storageBytes(val.dtype, numel(val.shape)), alignment),
      live: [d, Math.max(d, last.get(v) ?? d)] as [number, number],
    };
  });
  items.sort((a, b) => b.bytes - a.bytes || a.live[0] - b.live[0]);
  const placed: BufferAssignment[] = [];
  let arena = 0;
  for (const it of items) {
    const clash = placed
      .filter((p) => p.live[0] <= it.live[1] && it.live[0] <= p.live[1])
      .sort((a, b) => a.offset - b.offset);
    let off = 0;
    for (const c of clash) {
      if (off + it.bytes <= c.offset) break;
      off = Math.max(off, c.offset + c.bytes);
    }
    placed.push({ value: it.value, offset: off, bytes: it.bytes, live: it.live });
    arena = Math.max(arena, off + it.bytes);
  }
  const aliases = new Map<ValueId, ValueId>();
  for (const [v, r] of roots) if (v !== r) aliases.set(v, r);
  let constBytes = 0,
    stateBytes = 0,
    preparedBytes = 0;
  for (const p of plans)
    if (p.phase === "bind" && p.dispatches.length > 0)
      preparedBytes += storageBytes(g.values[p.out]!.dtype, numel(g.values[p.out]!.shape));
  for (const v of g.values) {
    const b = storageBytes(v.dtype, numel(v.shape));
    if (v.storage.kind === "const" || v.storage.kind === "computed") constBytes += b;
    if (v.storage.kind === "state") stateBytes += b;
  }
  return {
    transients: placed.sort((a, b) => a.live[0] - b.live[0]),
    arenaBytes: arena,
    unsharedBytes: items.reduce((a, it) => a + it.bytes, 0),
    aliases,
    constBytes,
    stateBytes,
    preparedBytes,
  };
}

/** The slot schema: every per-step input at a stable, 16-byte aligned offset of one host-written block. */
export function slotSchema(g: Graph): SlotSpec[] {
  let off = 0;
  const out: SlotSpec[] = [];
  for (const v of g.values) {
    if (v.storage.kind !== "slot") continue;
    const bytes = storageBytes(v.dtype, numel(v.shape));
    out.push({ key: v.storage.key, slot: v.storage.slot, dtype: v.dtype, shape: v.shape, bytes, offset: off });
    off = align(off + bytes, 16);
  }
  return out;
}
