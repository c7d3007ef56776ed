// Attention requests (SDPA over dense or paged K/V, causal/sliding/tensor masks, flash-decode splits) as
// synthesizeAttention calls: the strides of each operand collapsed to [batch, head, token, dim].

import { numel } from "@poot/graph-ir";
import type { Access, KernelRequest } from "@poot/graph-plan";
import type { SynthCaps } from "../caps.js";
import { KernelgenError } from "../errors.js";
import { attentionMinSplitKeys, attentionSplits, synthesizeAttention } from "../synth/attention.js";
import type { Strides4 } from "../synth/attention.js";
import type { StorageDType } from "../synth/storage.js";
import { requireDense } from "./access.js";
import { bind, input, scalar, stridesOnto, type RequestKernel } from "./request-bind.js";

/** [batch, head, token, dim] strides of a rank-≥3 access whose batch dims collapse to one stride. */
function strides4(a: Access, what: string): Strides4 {
  if (a.offset !== 0)
    throw new KernelgenError("bad_shape", `${what} must start at offset 0`, { synth: "attention", param: what });
  const r = a.shape.length;
  const batch = a.shape
    .slice(0, r - 3)
    .map((d, i) => ({ d, s: a.strides[i] as number }))
    .filter((x) => x.d > 1);
  if (batch.length > 1) {
    for (let i = 0; i + 1 < batch.length; i++)
      if (
        (batch[i] as { s: number }).s !==
        (batch[i + 1] as { s: number; d: number }).s * (batch[i + 1] as { d: number }).d
      )
        throw new KernelgenError("bad_shape", `${what} batch dims do not collapse`, {
          synth: "attention",
          param: what,
        });
  }
  const sb = batch.length === 0 ? 0 : (batch[batch.length - 1] as { s: number }).s;
  return [sb, a.strides[r - 3] as number, a.strides[r - 2] as number, a.strides[r - 1] as number];
}

/** An Attention request (decision 0603 for the paged form). */
export function attention(req: KernelRequest, name: string, caps: SynthCaps): RequestKernel {
  const p = req.params as Record<string, unknown>;
  const [q, k, v, limit, pages] = req.inputs as [Access, Access, Access, Access | undefined, Access | undefined];
  const mask = p.mask as string;
  const pageSize = (p.pageSize as number | undefined) ?? 0;
  if (!["none", "causal", "sliding", "bool", "additive"].includes(mask))
    throw new KernelgenError("bad_param", `attention mask ${mask} is not synthesized`, {
      synth: "attention",
      param: "mask",
      value: mask,
    });
  const tensorMask = mask === "bool" || mask === "additive";
  const r = q.shape.length;
  const [H, Tq, D] = q.shape.slice(-3) as [number, number, number];
  // Paged (decision 0603): k/v are pools [rows, Hkv, D] read through the page table [batch, pages].
  if (pageSize > 0 && (pages === undefined || k.shape.length !== 3 || pages.shape.length !== 2))
    throw new KernelgenError(
      "bad_shape",
      "a paged attention takes k/v pools [rows, Hkv, D] and a page table [batch, pages]",
      { synth: "attention", param: "pages" },
    );
  const [Hkv, Tk] =
    pageSize > 0
      ? [k.shape[1] as number, (pages!.shape[1] as number) * pageSize]
      : (k.shape.slice(-3) as [number, number, number]);
  const Dv = v.shape[v.shape.length - 1] as number;
  const poolStrides = (a: Access, what: string): Strides4 => {
    if (a.offset !== 0)
      throw new KernelgenError("bad_shape", `${what} must start at offset 0`, { synth: "attention", param: what });
    return [0, a.strides[1] as number, a.strides[0] as number, a.strides[2] as number];
  };
  if (pages !== undefined) requireDense("attention", "pages", pages);
  const batch = numel(q.shape.slice(0, -3));
  let limitStrides: [number, number, number] | undefined;
  let maskTensor: { dtype: StorageDType; strides: Strides4 } | undefined;
  if (limit !== undefined && tensorMask) {
    if (limit.offset !== 0)
      throw new KernelgenError("bad_shape", "mask must start at offset 0", { synth: "attention", param: "mask" });
    const ms = stridesOnto(limit, [...q.shape.slice(0, -1), Tk]);
    const bs = ms.slice(0, r - 3).filter((_, i) => (q.shape[i] as number) > 1);
    maskTensor = {
      dtype: scalar(limit.dtype, "mask"),
      strides: [bs[bs.length - 1] ?? 0, ms[r - 3] as number, ms[r - 2] as number, ms[r - 1] as number],
    };
  } else if (limit !== undefined) {
    if (limit.offset !== 0)
      throw new KernelgenError("bad_shape", "limit must start at offset 0", { synth: "attention", param: "limit" });
    const ls = stridesOnto(limit, [...q.shape.slice(0, -1), 1]);
    const bs = ls.slice(0, r - 3).filter((_, i) => (q.shape[i] as number) > 1);
    limitStrides = [bs[bs.length - 1] ?? 0, ls[r - 3] as number, ls[r - 2] as number];
  }
  const splits =
    caps.splitAttention === true && caps.computeUnits !== undefined
      ? attentionSplits(batch * H * Tq, Tk, caps.computeUnits, attentionMinSplitKeys(D, Dv, caps, tensorMask))
      : 1;
  const kk = synthesizeAttention(
    {
      name,
      splits,
      batch,
      queries: Tq,
      heads: H,
      kvHeads: Hkv,
      headDim: D,
      valueDim: Dv,
      keys: Tk,
      scale: (p.scale ?? 1) as number,
      ...(p.softCap === null || p.softCap === undefined ? {} : { softCap: p.softCap as number }),
      mask: mask as "causal",
      ...(mask === "sliding" ? { window: p.window as number } : {}),
      strides: {
        q: strides4(q, "q"),
        k: pageSize > 0 ? poolStrides(k, "k") : strides4(k, "k"),
        v: pageSize > 0 ? poolStrides(v, "v") : strides4(v, "v"),
        out: strides4(req.output, "out"),
        ...(limitStrides === undefined ? {} : { limit: limitStrides }),
      },
      ...(maskTensor === undefined ? {} : { maskTensor }),
      ...(pageSize > 0 ? { paged: { pageSize } } : {}),
      qDtype: scalar(q.dtype, "q"),
      kvDtype: scalar(k.dtype, "k"),
      outDtype: scalar(req.output.dtype, "out"),
    },
    caps,
  );
  if (k.dtype !== v.dtype)
    throw new KernelgenError("bad_dtype", "k and v must share a dtype", { synth: "attention", param: "v" });
  const named = {
    q: input(0),
    k: input(1),
    v: input(2),
    ...(limit === undefined ? {} : tensorMask ? { mask: input(3) } : { limit: input(3) }),
    ...(pageSize > 0 ? { pages: input(4) } : {}),
  };
  if (kk.split === undefined) return bind(kk, named);
  // Flash-decode: partials into the transient `part`, then the combine writes the output.
  return {
    ...bind(kk, named, "part"),
    transient: { buffer: "part", elements: kk.split.partElements },
    then: bind(kk.split.combine, {}, "part"),
  };
}
