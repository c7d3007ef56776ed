// tiling and flash-region synthesis: choose each composite's schedule (workgroup, tiles, split) from
// the target's caps. Schedules are params the kernel synthesizers read; they never change semantics.

import { numel, type Eqn, type Params } from "@poot/graph-ir";
import type { Region } from "../region.js";
import type { Pass, Rewrite, Rule, RuleContext } from "../rules.js";
import { planLimits } from "../target.js";

const pow2Floor = (x: number): number => 2 ** Math.floor(Math.log2(Math.max(1, x)));
const pow2Ceil = (x: number): number => 2 ** Math.ceil(Math.log2(Math.max(1, x)));

function withSchedule(e: Eqn, schedule: Record<string, number | string>): Rewrite {
  return { kind: "replace", eqn: { ...e, params: { ...e.params, schedule } as Params } };
}

/** Rotation group of a Rope inside an epilogue: a workgroup must own whole heads so pairs stay local. */
function ropeGroup(region: Region | null): number {
  let g = 1;
  // Rope pairs and row reductions (per-head norms) both need whole rows inside one workgroup.
  for (const n of region?.nodes ?? []) {
    const row =
      n.op === "Rope"
        ? n.shape.at(-1)!
        : n.op === "Reduce" && region!.nodes[(n.args[0] as { node?: number }).node ?? -1] !== undefined
          ? region!.nodes[(n.args[0] as { node: number }).node]!.shape.at(-1)!
          : 1;
    g = Math.max(g, row);
  }
  return g;
}

function contractionSchedule(cx: RuleContext, e: Eqn): Record<string, number | string> {
  const L = planLimits(cx.target);
  const out = cx.draft.values[e.inputs[0] as number]!.shape;
  const rows = numel(out.slice(0, -1));
  const group = ropeGroup((e.params.epilogue ?? null) as Region | null);
  if (rows <= 8) {
    // GEMV: one subgroup per output column reduces over K; a workgroup owns a multiple of the rope group.
    const wg = Math.min(L.maxWorkgroupSize, 256);
    const perWg = Math.max(1, Math.floor(wg / L.subgroupSize));
    const tileN = group > 1 ? Math.max(group, Math.ceil(perWg / group) * group) : perWg;
    return { shape: "gemv", workgroup: wg, tileN, rows };
  }
  const matrix = cx.target.caps.matrixShapes[0];
  let tile = 128;
  // A and B tiles of f32 staging must fit in shared memory twice (double buffering).
  while (tile > 16 && 2 * 2 * tile * 32 * 4 > L.sharedBytes) tile /= 2;
  const tileN = group > 1 ? Math.max(tile, pow2Ceil(group)) : tile;
  return {
    shape: "gemm",
    workgroup: Math.min(L.maxWorkgroupSize, 256),
    tileM: tile,
    tileN,
    tileK: 32,
    matrix: matrix === undefined ? "none" : `${matrix.m}x${matrix.n}x${matrix.k}`,
  };
}

const tilingRules: Rule[] = [
  {
    name: "tile",
    ops: [
      "ContractionEpilogue",
      "PackedContraction",
      "IndexedMatMul",
      "FusedRow",
      "Fused",
      "Rope",
      "ArgMaxChunk",
      "ArgMaxCombine",
      "PackedRowGather",
    ],
    apply(_k, e, cx) {
      if (e.params.schedule !== undefined) return null;
      const L = planLimits(cx.target);
      switch (e.op) {
        case "IndexedMatMul":
          // Gate-routed experts: one thread per output element walks the token's chosen experts.
          if (e.params.routing !== undefined)
            return withSchedule(e, { shape: "routed", workgroup: Math.min(L.maxWorkgroupSize, 256) });
          return withSchedule(e, contractionSchedule(cx, e));
        case "ContractionEpilogue":
        case "PackedContraction":
          return withSchedule(e, contractionSchedule(cx, e));
        case "FusedRow": {
          const red = (e.params.region as Region).nodes.find((n) => n.op === "Reduce")!;
          const src = red.args[0]!;
          const len =
            "in" in src
              ? cx.draft.values[e.inputs[src.in] as number]!.shape.at(-1)!
              : (e.params.region as Region).nodes[(src as { node: number }).node]!.shape.at(-1)!;
          return withSchedule(e, {
            shape: "row",
            workgroup: Math.min(L.maxWorkgroupSize, Math.max(L.subgroupSize, pow2Ceil(Math.ceil(len / 4)))),
            rowLength: len,
          });
        }
        default:
          return withSchedule(e, { shape: "elementwise", workgroup: Math.min(L.maxWorkgroupSize, 256), perThread: 4 });
      }
    },
  },
];

/** The tiling pass. */
export const tiling: Pass = {
  name: "tiling",
  numerics: "exact",
  doc: "workgroup and tile sizes from caps (schedule params only)",
  rules: tilingRules,
};

const flashRules: Rule[] = [
  {
    name: "flash-schedule",
    ops: ["Attention"],
    apply(_k, e, cx) {
      if (e.params.schedule !== undefined) return null;
      const L = planLimits(cx.target);
      const q = cx.draft.values[e.inputs[0] as number]!.shape,
        k = cx.draft.values[e.inputs[1] as number]!.shape,
        v = cx.draft.values[e.inputs[2] as number]!.shape;
      const r = q.length;
      const [h, tq, d] = q.slice(-3) as [number, number, number];
      const paged = ((e.params.pageSize as number | undefined) ?? 0) > 0;
      // A paged Attention reads pages-per-sequence x pageSize keys through its page table (last input).
      const tk = paged
        ? cx.draft.values[e.inputs[e.inputs.length - 1] as number]!.shape[1]! * (e.params.pageSize as number)
        : k[r - 2]!;
      const dv = v[v.length - 1]!;
      const heads = numel(q.slice(0, -3)) * h;
      // K and V tiles in f32 take half the shared memory; the other half holds Q rows and partial sums.
      const kvTile = Math.min(128, pow2Floor(L.sharedBytes / 2 / ((d + dv) * 4)));
      // A few query rows in decode mode (speculative drafts) still use the split-K decode schedule.
      const decode = tq === 1 || (cx.options.mode === "decode" && tq <= 8);
      // Split the keys across workgroups when heads alone cannot fill the device (flash-decoding).
      const splitK = decode
        ? Math.max(1, Math.min(Math.floor(L.computeUnits / heads), Math.ceil(tk / Math.max(kvTile, 1))))
        : 1;
      return withSchedule(e, {
        shape: decode ? "flash-decode" : "flash-prefill",
        kvTile,
        qTile: decode ? tq : Math.min(64, pow2Ceil(tq)),
        splitK,
        workgroup: Math.min(L.maxWorkgroupSize, 128),
        combine: splitK > 1 ? "in-kernel-last-block" : "none",
      });
    },
  },
];

/** The flash-region synthesis pass. */
export const flashRegions: Pass = {
  name: "flash-regions",
  numerics: "exact",
  doc: "Attention gets its flash schedule (KV tile from shared memory, split-K for decode)",
  rules: flashRules,
};
