// The packed-weight format descriptor: block geometry, byte layout of a block, reference decoder.
// The layout is data (fields at byte offsets) so it can later be re-expressed as a graph-ir PackedFormat.

/** Scalar kinds a block field is made of (all little-endian). */
export type FieldKind = "u8" | "i8" | "u16" | "f16" | "bf16" | "f32";

/** One field of a block: `count` scalars of `kind` starting at byte `offset` within the block. */
export interface QuantField {
  /** Field name as in ggml's block struct (`d`, `dmin`, `scales`, `qs`, `qh`, `ql`, `hmask`, `m`). */
  readonly name: string;
  /** Byte offset within the block. */
  readonly offset: number;
  /** Scalar kind. */
  readonly kind: FieldKind;
  /** Number of scalars. */
  readonly count: number;
}

/** GGML tensor type names this package decodes. */
export type GGMLTypeName =
  | "F32"
  | "F16"
  | "BF16"
  | "Q4_0"
  | "Q4_1"
  | "Q5_0"
  | "Q5_1"
  | "Q8_0"
  | "Q2_K"
  | "Q3_K"
  | "Q4_K"
  | "Q5_K"
  | "Q6_K"
  | "IQ4_NL"
  | "IQ4_XS"
  | "MXFP4";

/**
 * A storage format: `blockElems` consecutive elements of a row are stored in `blockBytes` bytes laid out
 * as `fields`. `decodeBlock` is the reference decoder (exact, in f32) following ggml's dequantize_row_*.
 */
export interface QuantFormat {
  /** GGML type name. */
  readonly name: GGMLTypeName;
  /** GGML type id (`enum ggml_type`). */
  readonly ggmlType: number;
  /** Elements per block (1 for plain floats). */
  readonly blockElems: number;
  /** Bytes per block. */
  readonly blockBytes: number;
  /** Byte layout of one block. */
  readonly fields: readonly QuantField[];
  /** Decodes the block at `bytes[offset..offset+blockBytes)` into `out[outOffset..outOffset+blockElems)`. */
  decodeBlock(bytes: Uint8Array, offset: number, out: Float32Array, outOffset: number): void;
}

/** Bytes needed for `elems` elements of `format` (elems must be a multiple of the block size). */
export function packedByteLength(format: QuantFormat, elems: number): number {
  return (elems / format.blockElems) * format.blockBytes;
}

/**
 * Decodes a whole packed buffer (whole blocks, row after row) into f32.
 * `bytes.byteLength` must be a multiple of `format.blockBytes`.
 */
export function decodePacked(format: QuantFormat, bytes: Uint8Array): Float32Array {
  const blocks = Math.floor(bytes.byteLength / format.blockBytes);
  const out = new Float32Array(blocks * format.blockElems);
  for (let b = 0; b < blocks; b++) format.decodeBlock(bytes, b * format.blockBytes, out, b * format.blockElems);
  return out;
}
