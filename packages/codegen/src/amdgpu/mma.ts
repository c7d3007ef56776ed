// How the AMDGPU target lowers the kernel IR's AMD `mma` shapes (decision 2401), as data the emitter and the tests
// share: MFMA takes the IR's fragments as they are; WMMA (RDNA3, wave32) wants a whole A row and B column in every
// lane, so each operand word is read from another lane (ds_bpermute), and B's 8 columns are duplicated into WMMA's
// 16 so that each lane keeps four of its eight accumulators.

import type { MmaInput } from "@poot/kernel-dsl";

/** One word of a WMMA operand register: read IR fragment word `word` from lane `(lane & mask) + offset`. */
export interface WmmaGatherWord {
  readonly offset: number;
  readonly word: number;
}

/** A WMMA operand (8 words = 16 values) assembled from the IR fragments of other lanes. */
export interface WmmaGather {
  readonly mask: number;
  readonly words: readonly WmmaGatherWord[];
}

/**
 * WMMA operand A, word w (values 2w, 2w+1 = A[r][2w], A[r][2w+1] of row r = lane & 15): the IR lane r + 16·⌊w/4⌋
 * holds A[r][8·⌊w/4⌋ .. +7], word w mod 4.
 */
export const WMMA_A: WmmaGather = {
  mask: 15,
  words: Array.from({ length: 8 }, (_, w) => ({ offset: 16 * (w >> 2), word: w & 3 })),
};

/**
 * WMMA operand B, word w (B[2w][n], B[2w+1][n] of column n = (lane & 15) mod 8, B's 8 columns duplicated): the IR
 * lane n + 8·⌊w/2⌋ holds B[4·⌊w/2⌋ .. +3][n], word w mod 2.
 */
export const WMMA_B: WmmaGather = {
  mask: 7,
  words: Array.from({ length: 8 }, (_, w) => ({ offset: 8 * (w >> 1), word: w & 1 })),
};

/**
 * The lane bit that picks which half of WMMA's 8 accumulators a lane keeps: items 4q..4q+3 with q = bit 3 of the lane
 * (C enters there, the other four are zero; D is read back from there).
 */
export const WMMA_KEEP_BIT = 3;

/** The LLVM 19 intrinsic of an AMD matrix instruction and its operand types. */
export function amdMatrixIntrinsic(
  layout: "mfma" | "wmma",
  input: MmaInput,
): { readonly name: string; readonly ab: string; readonly c: string; readonly extra: string } {
  if (layout === "mfma") {
    // v_mfma_f32_16x16x16{f16,bf16_1k} (gfx90a), v_mfma_f32_16x16x16_{f16,bf16} (gfx942); cbsz, abid, blgp = 0.
    const ab = input === "bf16" ? "<4 x i16>" : "<4 x half>";
    return {
      name: input === "bf16" ? "llvm.amdgcn.mfma.f32.16x16x16bf16.1k" : "llvm.amdgcn.mfma.f32.16x16x16f16",
      ab,
      c: "<4 x float>",
      extra: ", i32 0, i32 0, i32 0",
    };
  }
  // v_wmma_f32_16x16x16_{f16,bf16} (gfx11), overloaded on the accumulator and operand types.
  const ab = input === "bf16" ? "<16 x i16>" : "<16 x half>";
  return {
    name: `llvm.amdgcn.wmma.f32.16x16x16.${input}.v8f32.${input === "bf16" ? "v16i16" : "v16f16"}`,
    ab,
    c: "<8 x float>",
    extra: "",
  };
}
