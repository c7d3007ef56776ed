// Horizontal groups at plan time (decision 0402): the consecutive member contractions of a group (params.group)
// become one dispatch on the first member's plan; the others keep their values but launch nothing.

import type { Graph } from "@poot/graph-ir";
import type { PlanLimits } from "../target.js";
import type { Access, KernelRequest, Plan } from "./types.js";

/** The one request serving `members`: their inputs and the other members' outputs, each value once. */
function groupRequest(members: readonly KernelRequest[]): KernelRequest {
  const lead = members[0]!;
  const seen = new Set<number>([lead.output.value]);
  const inputs: Access[] = [];
  const add = (a: Access): void => {
    if (seen.has(a.value)) return;
    seen.add(a.value);
    inputs.push(a);
  };
  for (const m of members) m.inputs.forEach(add);
  for (const m of members.slice(1)) add(m.output);
  return { ...lead, inputs, emulated16: members.some((m) => m.emulated16), group: members };
}

/** Whether a member can join: a step-time single launch with a request. */
function joinable(p: Plan): boolean {
  return (
    p.phase === "step" &&
    p.kernel.provenance !== "none" &&
    p.dispatches.length === 1 &&
    p.dispatches[0]!.chunk === undefined
  );
}

/**
 * Rewrites the plans of each horizontal group into one launch (its workgroups cover every member's output
 * columns) on the first member, the others `{ provenance: "none", reason: "grouped" }`. A group whose members
 * cannot all join (a chunked launch, more buffers than the target binds) stays as separate launches.
 */
export function groupPlans(g: Graph, plans: readonly Plan[], L: PlanLimits): Plan[] {
  const out = [...plans];
  g.eqns.forEach((e, k) => {
    const grp = e.params.group as { index: number; size: number } | undefined;
    if (grp === undefined || grp.index !== 0) return;
    const ps = plans.slice(k, k + grp.size);
    if (ps.length !== grp.size || !ps.every(joinable)) return;
    const req = groupRequest(ps.map((p) => (p.kernel as { request: KernelRequest }).request));
    const roots = new Set([...req.inputs.map((a) => a.root), req.output.root]);
    if (roots.size > L.maxStorageBuffers) return;
    const total = ps.reduce(
      (a, p) => a + p.dispatches[0]!.grid[0] * p.dispatches[0]!.grid[1] * p.dispatches[0]!.grid[2],
      0,
    );
    const wg = ps[0]!.dispatches[0]!.workgroup;
    const x = Math.min(total, L.maxGrid[0]);
    out[k] = {
      ...ps[0]!,
      kernel: { provenance: "synthesized", request: req },
      dispatches: [{ grid: [x, Math.ceil(total / x), 1], workgroup: wg }],
    };
    for (let i = 1; i < ps.length; i++)
      out[k + i] = { ...ps[i]!, kernel: { provenance: "none", reason: "grouped" }, dispatches: [] };
  });
  return out;
}
