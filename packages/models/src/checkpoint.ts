// The format-neutral checkpoint interface shared by the safetensors and GGUF readers.
// Tensors are listed from the header at open; their bytes are read only when asked for.
import { ModelError } from "./errors.js";
import type { FileRange } from "./source.js";

/** One tensor's directory entry. `shape` is row-major (numpy order: last axis fastest) in every format. */
export interface TensorInfo {
  /** Tensor name as stored in the file. */
  readonly name: string;
  /** Storage type: a safetensors dtype ("F32", "BF16", ...) or a GGML type name ("Q4_K", "F16", ...). */
  readonly dtype: string;
  /** Row-major shape (for GGUF: the reverse of ggml's `ne`, see {@link GGUFTensorInfo.ggmlDims}). */
  readonly shape: readonly number[];
  /** Absolute byte offset of the tensor's data in `file`. */
  readonly byteOffset: number;
  /** Byte length of the stored (possibly packed) data. */
  readonly byteLength: number;
  /** File holding the tensor (shards differ per tensor). */
  readonly file: string;
  /**
   * For a [out, in] weight stored with its input columns reordered (GPTQ act-order, decision 2602): stored column k
   * holds input `inputOrder[k]`, so a matmul must gather x in this order first. Absent: columns in input order.
   */
  readonly inputOrder?: Int32Array;
  /**
   * For an FP8 weight opened with `activations: "fp8-static"` (decision 2610): the checkpoint's static activation
   * scale, so a matmul quantizes x to e4m3(clamp(x / inputScale, ±448)) · inputScale first. Absent: x stays f32.
   */
  readonly inputScale?: number;
  /**
   * For an FP8 weight opened with `activations: "fp8-dynamic"` (decision 2610): x is quantized to e4m3 per group of
   * this many consecutive inputs of each row, with the scale max|x_group| / 448 (the input size: per token).
   */
  readonly inputGroup?: number;
}

/** An opened checkpoint: header parsed and validated, data left on disk. */
export interface Checkpoint {
  /** Container format. */
  readonly format: "safetensors" | "gguf";
  /** Path that was opened (file or folder). */
  readonly path: string;
  /** All tensors, in file order. */
  tensors(): readonly TensorInfo[];
  /** Whether a tensor of that name exists. */
  has(name: string): boolean;
  /** The directory entry of a tensor; throws `MissingTensorError` when absent. */
  info(name: string): TensorInfo;
  /** Reads a tensor's stored bytes (packed for quantized types) with one positioned read. */
  read(name: string): Promise<Uint8Array>;
  /** Synchronous {@link Checkpoint.read}. */
  readSync(name: string): Uint8Array;
  /** {@link Checkpoint.readSync} into `dst` (exactly the tensor's byte length): straight into a device's memory. */
  readInto(name: string, dst: Uint8Array): void;
  /** Where a tensor's stored bytes lie in an open file, for a device that maps them; absent for in-memory sources. */
  locate?(name: string): FileRange | undefined;
  /** Reads a tensor widened/decoded to f32 (bf16/f16 exactly; quantized types by the reference decoder). */
  readF32(name: string): Promise<Float32Array>;
  /** Synchronous {@link Checkpoint.readF32}. */
  readF32Sync(name: string): Float32Array;
  /** Closes every file handle; later reads fail with code `closed`. */
  close(): void;
}

/** What {@link requireTensor} checks. */
export interface TensorExpectation {
  /** Exact row-major shape. */
  readonly shape?: readonly number[];
  /** Allowed storage types (`dtype` values). */
  readonly dtypes?: readonly string[];
}

/**
 * Returns the tensor's info after checking it exists and has the expected shape / storage type; throws
 * `MissingTensorError`, or a `ModelError` with code `bad-shape` / `wrong-dtype` naming file, tensor and offset.
 */
export function requireTensor(ck: Checkpoint, name: string, expect: TensorExpectation = {}): TensorInfo {
  const t = ck.info(name);
  const ctx = { file: t.file, tensor: name, offset: t.byteOffset };
  if (
    expect.shape !== undefined &&
    (expect.shape.length !== t.shape.length || expect.shape.some((d, i) => d !== t.shape[i]))
  ) {
    throw new ModelError("bad-shape", `expected shape [${expect.shape.join(", ")}], found [${t.shape.join(", ")}]`, {
      ...ctx,
      value: t.shape,
    });
  }
  if (expect.dtypes !== undefined && !expect.dtypes.includes(t.dtype)) {
    throw new ModelError("wrong-dtype", `expected ${expect.dtypes.join(" | ")}, found ${t.dtype}`, {
      ...ctx,
      value: t.dtype,
    });
  }
  return t;
}

/** Product of a shape's dimensions (1 for a scalar). */
export function numel(shape: readonly number[]): number {
  let n = 1;
  for (const d of shape) n *= d;
  return n;
}
