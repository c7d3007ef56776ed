// The RoPE synthesizer: x·cos + rotate(x)·sin over the last axis with cos/sin broadcast to x (explicit strides),
// rotate-half (NeoX) or interleaved (GPT-J) pairing, each step rounded to the op's dtype like graph-plan's Rope.

import { kernel } from "@poot/kernel-dsl";
import type { Arr, Val } from "@poot/kernel-dsl";
import { checkCaps, checkShape, grid2d, numelOf, pow2Workgroup } from "../caps.js";
import type { SynthCaps, SynthKernel } from "../caps.js";
import { KernelgenError } from "../errors.js";
import { broadcastStrides, emitIndex, linearThread } from "./index-math.js";
import { checkDType, elemOf, storeAs } from "./storage.js";
import type { StorageDType } from "./storage.js";

/** A RoPE: x [..., D] (D even); cos/sin broadcast to x's shape (numpy rules, or explicit strides). */
export interface RopeRequest {
  readonly name: string;
  readonly shape: readonly number[];
  /** `half`: element j pairs with j ± D/2 (rotate_half); `interleaved`: 2i pairs with 2i+1. */
  readonly style: "half" | "interleaved";
  readonly xDtype?: StorageDType;
  readonly cos: {
    readonly dtype?: StorageDType;
    readonly shape: readonly number[];
    readonly strides?: readonly number[];
  };
  readonly sin: {
    readonly dtype?: StorageDType;
    readonly shape: readonly number[];
    readonly strides?: readonly number[];
  };
  /** Dtype each step (x·cos, rot·sin, their sum) is rounded to, and the output dtype (default f32). */
  readonly dtype?: "f32" | "bf16" | "f16";
}

const SYNTH = "rope";

/** Generates the RoPE kernel: one thread per output element. Buffers: x, cos, sin, out. */
export function synthesizeRope(req: RopeRequest, caps: SynthCaps): SynthKernel {
  checkCaps(SYNTH, caps);
  checkShape(SYNTH, "shape", req.shape);
  const D = req.shape[req.shape.length - 1] as number;
  if (D % 2 !== 0)
    throw new KernelgenError("bad_shape", `RoPE needs an even last dim, got ${D}`, {
      synth: SYNTH,
      param: "shape",
      value: req.shape,
    });
  const xDtype = checkDType(SYNTH, "x", req.xDtype ?? "f32", ["f32", "bf16", "f16"]);
  const cDtype = checkDType(SYNTH, "cos", req.cos.dtype ?? "f32", ["f32", "bf16", "f16"]);
  const sDtype = checkDType(SYNTH, "sin", req.sin.dtype ?? "f32", ["f32", "bf16", "f16"]);
  const dtype = req.dtype ?? "f32";
  const cs = req.cos.strides ?? broadcastStrides(SYNTH, "cos", req.cos.shape, req.shape);
  const ss = req.sin.strides ?? broadcastStrides(SYNTH, "sin", req.sin.shape, req.shape);
  const total = numelOf(req.shape);
  const wg = pow2Workgroup(total, Math.min(caps.maxWorkgroup, 256));
  const h = D / 2;
  const k = kernel(req.name, { workgroupSize: [wg, 1, 1] }, (b) => {
    const { let_, if_, select, pack, unpack } = b;
    const x = b.buffer("x", elemOf(xDtype), "read") as Arr<"f32">;
    const cos = b.buffer("cos", elemOf(cDtype), "read") as Arr<"f32">;
    const sin = b.buffer("sin", elemOf(sDtype), "read") as Arr<"f32">;
    const out = b.buffer("out", elemOf(dtype), "write");
    // Rounding to a 16-bit dtype after each step reproduces the replaced chain's intermediate stores.
    const round = (v: Val<"f32">): Val<"f32"> => (dtype === "f32" ? v : unpack(dtype, pack(dtype, v)));
    const e = linearThread(b, wg);
    if_(e.lt(total), () => {
      const idx = emitIndex(b, e, req.shape, [cs, ss]);
      const j = let_(e.rem(D), "j");
      const first = let_(req.style === "half" ? j.lt(h) : j.and(1).eq(0), "first");
      const partnerAt = req.style === "half" ? select(first, e.add(h), e.sub(h)) : select(first, e.add(1), e.sub(1));
      const xv = let_(x.at(e), "xv");
      const pv = let_(x.at(let_(partnerAt, "pe")), "pv");
      const rot = let_(select(first, pv.neg(), pv), "rot");
      const m1 = let_(round(xv.mul(cos.at(idx.offset(0, 0)))), "m1");
      const m2 = let_(round(rot.mul(sin.at(idx.offset(1, 0)))), "m2");
      storeAs(b, out, dtype, e, round(m1.add(m2)));
    });
  });
  return { kernel: k, grid: grid2d(Math.ceil(total / wg), caps) };
}
