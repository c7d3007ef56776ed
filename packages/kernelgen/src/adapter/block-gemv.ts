// The sizes of a block GEMV (block-contraction.ts): lanes per dot product, outputs per block, workgroup size, and
// whether weights are read packed, as 16-byte words or by serial SIMD threads; null where the block form does not apply.

import { isPacked, numel } from "@poot/graph-ir";
import type { PackedFormat, ScalarDType } from "@poot/graph-ir";
import type { Access, Region } from "@poot/graph-plan";
import { pow2Workgroup } from "../caps.js";
import type { SynthCaps } from "../caps.js";
import { simdDotApplies } from "./contraction-cpu.js";
import { isDense } from "./access.js";
import { epilogueBlocking, type EpilogueBlocking } from "./block-epilogue.js";

/** The sizes of one cooperative block GEMV (members of a horizontal group share the workgroup size). */
export interface BlockGemv {
  /** A, the B operands, then the epilogue's extras. */
  readonly inputs: readonly Access[];
  /** B operands sharing A. */
  readonly heads: number;
  readonly epilogue: Region;
  readonly accDtype: ScalarDType;
  readonly transposeB: boolean;
  readonly output: Access;
  readonly xDtype: ScalarDType;
  readonly wDtype: ScalarDType;
  /** Contraction depth and output columns. */
  readonly K: number;
  readonly N: number;
  /** [...rows, N] and its element count. */
  readonly accShape: readonly number[];
  readonly total: number;
  readonly blocking: EpilogueBlocking;
  /** Lanes per output's dot product (a subgroup when `useSg`). */
  readonly lanes: number;
  readonly useSg: boolean;
  /** Outputs per block. */
  readonly Bk: number;
  /** Its own workgroup size. */
  readonly wg: number;
  readonly blocks: number;
  /** 16-byte weight loads. */
  readonly vec: boolean;
  /** The B operands' packed format when they are read packed (lanes split each block, decision 0806). */
  readonly packed?: PackedFormat;
  /** Serial threads with SIMD loads (the CPU): one thread per output, each dot product a load4 loop (`simdDot`). */
  readonly serial?: boolean;
}

/** Outputs per block on serial threads (one thread each): about one head of RoPE, several blocks per thread to claim. */
const SERIAL_BLOCK = 64;

/**
 * The packed format every B shares when this kernel can read them packed (CUDA caps, f32 A, blocks of a multiple
 * of 8 elements), undefined when B is dense, null when B is packed in a way it cannot serve.
 */
function packedWeights(Bs: readonly Access[], A: Access, caps: SynthCaps): PackedFormat | undefined | null {
  const B = Bs[0] as Access;
  if (!isPacked(B.dtype)) return Bs.some((x) => isPacked(x.dtype)) ? null : undefined;
  const f = B.dtype.packed;
  const same = Bs.every((x) => isPacked(x.dtype) && x.dtype.packed.name === f.name);
  return same &&
    caps.vectorLoads === true &&
    caps.subgroupSize !== undefined &&
    A.dtype === "f32" &&
    f.blockSize % 8 === 0
    ? f
    : null;
}

/**
 * The sizes of the block GEMV for a contraction with a neighbour-reading epilogue, or null where it does not apply
 * (more than 8 rows of A, packed operands off the CUDA caps, strided operands, unbounded epilogue reads, a block that
 * does not fit workgroup memory). `workgroup` fixes the workgroup size (a member of a group): the block then holds about one output per
 * lane group of it.
 */
export function blockGemv(
  inputs: readonly Access[],
  heads: number,
  epilogue: Region,
  accDtype: ScalarDType,
  transposeB: boolean,
  output: Access,
  caps: SynthCaps,
  workgroup?: number,
): BlockGemv | null {
  const A = inputs[0] as Access;
  const Bs = inputs.slice(1, 1 + heads);
  const extras = inputs.slice(1 + heads);
  const B = Bs[0] as Access;
  // Serial threads (the CPU): only where every dot product is a SIMD load4 loop (packed B read as bytes).
  const serial = caps.serialThreads === true;
  if (
    serial &&
    (workgroup !== undefined ||
      caps.simdLoads !== true ||
      isPacked(A.dtype) ||
      !Bs.every((x) => simdDotApplies(A, x, transposeB)))
  )
    return null;
  if (epilogue.nodes.some((n) => n.op === "Reduce")) return null;
  if (B.shape.length !== 2 || ![A, ...Bs].every(isDense) || isPacked(A.dtype)) return null;
  // Packed weights ([N, K] rows of blocks) on the CUDA caps: lanes split each block, 8 elements a lane (decision 0806).
  const packed = serial ? undefined : packedWeights(Bs, A, caps);
  if (packed === null) return null;
  const wDtype = B.dtype as ScalarDType;
  const xDtype = A.dtype as ScalarDType;
  if (
    !serial &&
    packed === undefined &&
    (Bs.some((b) => b.dtype !== wDtype) || ![wDtype, xDtype].every((d) => d === "f32" || d === "bf16" || d === "f16"))
  )
    return null;
  const K = A.shape[A.shape.length - 1] as number;
  const nk = transposeB || packed !== undefined || isPacked(B.dtype);
  const N = B.shape[nk ? 0 : 1] as number;
  if (B.shape[nk ? 1 : 0] !== K || (packed !== undefined && K % packed.blockSize !== 0)) return null;
  const accShape = [...A.shape.slice(0, -1), N];
  const total = numel(accShape);
  // A GEMV (at most 8 rows of A): each output re-reads its weight row, so many rows belong to a tiled GEMM.
  if (total / N > 8) return null;
  const blocking = epilogueBlocking(epilogue, heads, accShape, extras, output);
  if (blocking === null || total % blocking.granule !== 0) return null;

  // Lanes per output as in the plain GEMV (one on serial threads); outputs per block: a multiple of the granule,
  // about 256 threads' worth (serial: SERIAL_BLOCK outputs, so a phase has several blocks per thread to claim).
  const sg = caps.subgroupSize;
  const lanesWant = serial ? 1 : pow2Workgroup(K, 32);
  const useSg = !serial && sg !== undefined && sg > 1 && sg <= caps.maxWorkgroup && lanesWant >= sg;
  const lanes = useSg ? (sg as number) : lanesWant;
  const g = blocking.granule;
  const perWg = Math.max(
    1,
    Math.floor((workgroup ?? Math.min(serial ? SERIAL_BLOCK : 256, caps.maxWorkgroup)) / lanes),
  );
  const Bk = Math.min(total, g * Math.ceil(perWg / g));
  // Serial threads: one thread per block computes its dot products, then its epilogue — no barrier, so the Wasm
  // target keeps every value in registers (a barrier puts each name in a memory frame).
  let wg = serial ? 1 : (workgroup ?? Math.max(lanes, pow2Workgroup(Bk * lanes, Math.min(caps.maxWorkgroup, 1024))));
  while (workgroup === undefined && wg > lanes && blockSharedBytes(Bk * heads, useSg, wg) > caps.sharedBytes) wg >>= 1;
  if (wg > caps.maxWorkgroup || blockSharedBytes(Bk * heads, useSg, wg) > caps.sharedBytes) return null;
  const vec =
    useSg &&
    caps.vectorLoads === true &&
    transposeB &&
    xDtype === "f32" &&
    (wDtype === "bf16" || wDtype === "f16") &&
    K % (8 * lanes) === 0;
  return {
    inputs,
    heads,
    epilogue,
    accDtype,
    transposeB,
    output,
    xDtype,
    wDtype,
    K,
    N,
    accShape,
    total,
    blocking,
    lanes,
    useSg,
    Bk,
    wg,
    blocks: Math.ceil(total / Bk),
    vec,
    ...(packed !== undefined ? { packed } : {}),
    ...(serial ? { serial } : {}),
  };
}

/** Workgroup memory of a block GEMV: the block's accumulators, and a lane-sum scratch without subgroups. */
export function blockSharedBytes(accs: number, useSg: boolean, wg: number): number {
  return (accs + (useSg ? 0 : wg)) * 4;
}
