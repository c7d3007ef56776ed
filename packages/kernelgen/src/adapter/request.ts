// The thin adapter from graph-plan: a KernelRequest (kind, op, accesses, params, region) and DeviceCaps become a
// synthesizer call, and the result says which request access each kernel buffer binds (request-bind.ts). Contractions
// and attention have adapters of their own (request-contraction.ts, request-attention.ts).

import { isPacked } from "@poot/graph-ir";
import type { ScalarDType } from "@poot/graph-ir";
import type { Access, DeviceCaps, KernelRequest, Region } from "@poot/graph-plan";
import { checkGrid } from "../caps.js";
import type { SynthCaps } from "../caps.js";
import { KernelgenError } from "../errors.js";
import { synthesizeIndexedMatMulWith } from "../synth/indexed.js";
import { synthesizeMovement } from "../synth/movement.js";
import { synthesizeRope } from "../synth/rope.js";
import { requireDense } from "./access.js";
import { routedIndexedMatMul } from "./routed.js";
import type { RoutedParams } from "./routed.js";
import { groupedContraction } from "./grouped.js";
import { packedDecode, regionElementwise, regionRow, singleNodeRegion } from "./region-kernels.js";
import { contraction, regionEpilogue } from "./request-contraction.js";
import { attention } from "./request-attention.js";
import { SYNTH, bind, extraBindings, input, scalar, stridesOnto, type RequestKernel } from "./request-bind.js";

export type { BindingSource, RequestKernel } from "./request-bind.js";

/** SynthCaps from graph-plan DeviceCaps (subgroups used when the device reports a width above 1). */
export function synthCapsFrom(caps: DeviceCaps): SynthCaps {
  return {
    maxWorkgroup: Math.min(caps.maxWorkgroupSize, caps.maxWorkgroupDims[0]),
    ...(caps.subgroupSize > 1 ? { subgroupSize: caps.subgroupSize } : {}),
    sharedBytes: caps.sharedBytes,
    maxGridDim: caps.maxGrid[0],
    ...(caps.matrixShapes.length > 0 ? { matrixShapes: caps.matrixShapes } : {}),
    computeUnits: caps.computeUnits,
  };
}

/**
 * Synthesizes the kernel a graph-plan request asks for. Throws `KernelgenError` for requests no synthesizer serves
 * (imported-only ops such as ArgMaxChunk, bool/additive attention masks, epilogues with Rope or reductions,
 * non-dense operands of fixed-layout kernels), and `exceeds_caps` when the kernel's grid exceeds the device's
 * per-axis workgroup limits (`maxGridDim` on x, min(maxGridDim, 65535) on y and z).
 */
export function synthesizeRequest(
  req: KernelRequest,
  deviceCaps: DeviceCaps | SynthCaps,
  name = `k_${req.op.toLowerCase()}`,
): RequestKernel {
  const caps = "maxWorkgroupSize" in deviceCaps ? synthCapsFrom(deviceCaps) : deviceCaps;
  const k = synthesize(req, caps, name);
  checkGrid(name, k.grid, caps);
  return k;
}

/** synthesizeRequest without the grid check. */
function synthesize(req: KernelRequest, caps: SynthCaps, name: string): RequestKernel {
  const { inputs, output } = req;
  const p = req.params as Record<string, unknown>;
  switch (req.kind) {
    case "elementwise":
      return bind(
        regionElementwise(name, req.region ?? singleNodeRegion(req.op, inputs, p, output), inputs, output, caps),
      );
    case "reduction-row": {
      if (req.op === "Reduce") {
        const axes = p.axes as number[];
        const x = inputs[0] as Access;
        // Other axes: one thread per output element reduces sequentially.
        if (axes.length !== 1 || (axes[0] !== -1 && axes[0] !== x.shape.length - 1))
          return bind(regionElementwise(name, singleNodeRegion("Reduce", inputs, p, output), inputs, output, caps));
        const keepShape = [...x.shape.slice(0, -1), 1];
        const region: Region = {
          nodes: [
            {
              op: "Reduce",
              args: [{ in: 0 }],
              params: { ...p, keepdim: true } as never,
              dtype: output.dtype as ScalarDType,
              shape: keepShape,
            },
          ],
          result: 0,
        };
        const out =
          output.shape.length === keepShape.length
            ? output
            : { ...output, shape: keepShape, strides: [...output.strides, 1] };
        return bind(regionRow(name, region, inputs, out, caps));
      }
      if (req.region === null)
        throw new KernelgenError("bad_param", `${req.op} is served by the imported library, not synthesized`, {
          synth: SYNTH,
          param: "op",
          value: req.op,
        });
      return bind(regionRow(name, req.region, inputs, output, caps));
    }
    case "movement": {
      if (req.op === "DecodePacked")
        return bind(packedDecode(name, inputs[0] as Access, undefined, output, caps), { table: input(0) });
      if (req.op === "PackedRowGather")
        return bind(packedDecode(name, inputs[0] as Access, inputs[1], output, caps), {
          table: input(0),
          ids: input(1),
        });
      if (isPacked(output.dtype)) return packedMovement(req, name, caps);
      return bind(
        regionElementwise(name, req.region ?? singleNodeRegion(req.op, inputs, p, output), inputs, output, caps),
      );
    }
    case "gemv":
    case "gemm":
    case "dequant-gemv":
    case "dequant-gemm":
      return req.group === undefined ? contraction(req, name, caps) : bind(groupedContraction(req, name, caps));
    case "attention":
      return attention(req, name, caps);
    case "rope": {
      const [x, cos, sin] = inputs as [Access, Access, Access];
      requireDense("rope", "x", x);
      requireDense("rope", "out", output);
      if (cos.offset !== 0 || sin.offset !== 0)
        throw new KernelgenError("bad_shape", "cos/sin must start at offset 0", { synth: "rope", param: "cos" });
      const k = synthesizeRope(
        {
          name,
          shape: x.shape,
          style: p.style as "half" | "interleaved",
          xDtype: scalar(x.dtype, "x"),
          dtype: p.dtype as "f32",
          cos: { dtype: scalar(cos.dtype, "cos"), shape: x.shape, strides: stridesOnto(cos, x.shape) },
          sin: { dtype: scalar(sin.dtype, "sin"), shape: x.shape, strides: stridesOnto(sin, x.shape) },
        },
        caps,
      );
      return bind(k, { x: input(0), cos: input(1), sin: input(2) });
    }
    case "indexed-matmul": {
      if (p.routing !== undefined)
        return bind(routedIndexedMatMul(name, inputs, p as unknown as RoutedParams, output, caps));
      const [x, w, ids, ...extras] = inputs as [Access, Access, Access, ...Access[]];
      for (const [a, n] of [
        [x, "x"],
        [w, "w"],
        [ids, "ids"],
        [output, "out"],
      ] as const)
        requireDense("indexedMatMul", n, a);
      const [T, K] = x.shape as [number, number];
      const [E, N] = w.shape as [number, number, number];
      const S = ids.shape[1] as number;
      const ep = regionEpilogue((p.epilogue ?? null) as Region | null, p.accDtype as ScalarDType, extras, [T, S, N]);
      const k = synthesizeIndexedMatMulWith(
        {
          name,
          T,
          S,
          K,
          N,
          experts: E,
          xDtype: scalar(x.dtype, "x"),
          wDtype: scalar(w.dtype, "w"),
          outDtype: scalar(output.dtype, "out"),
        },
        caps,
        ep,
      );
      return bind(k, { x: input(0), w: input(1), ids: input(2), ...extraBindings(extras.length, 3) });
    }
    default:
      return req.kind satisfies never;
  }
}

function packedMovement(req: KernelRequest, name: string, caps: SynthCaps): RequestKernel {
  const x = req.inputs[0] as Access;
  const p = req.params as Record<string, unknown>;
  for (const a of [x, req.output]) requireDense("movement", "packed operand", a);
  const dtype = x.dtype as { packed: import("@poot/graph-ir").PackedFormat };
  switch (req.op) {
    case "Reshape":
      return bind(
        synthesizeMovement({ name, dtype, shape: x.shape, op: { op: "reshape", shape: req.output.shape } }, caps),
        { x: input(0) },
      );
    case "Gather": {
      const ids = req.inputs[1] as Access;
      requireDense("movement", "indices", ids);
      return bind(
        synthesizeMovement(
          { name, dtype, shape: x.shape, op: { op: "gather", axis: (p.axis ?? 0) as number, indicesShape: ids.shape } },
          caps,
        ),
        { x: input(0), indices: input(1) },
      );
    }
    default:
      throw new KernelgenError("bad_param", `packed ${req.op} is not a graph-ir movement`, {
        synth: "movement",
        param: "op",
        value: req.op,
      });
  }
}
