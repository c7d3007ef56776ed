// GGUF v2/v3 reader: metadata key-values, tensor directory, alignment and data offset, lazy tensor reads.
// Shapes are exposed row-major (numpy order), i.e. reversed from ggml's fastest-first `ne`.
import type { Checkpoint, TensorInfo } from "./checkpoint.js";
import { CheckpointFormatError, MissingTensorError, ModelError, UnsupportedTensorTypeError } from "./errors.js";
import { HeaderReader } from "./gguf-reader.js";
import { decodePacked, type QuantFormat } from "./quant/format.js";
import { formatById, ggmlTypeName } from "./quant/registry.js";
import { FileSource, type ByteSource, type FileRange } from "./source.js";

/** A GGUF metadata value. 64-bit integers become numbers when safe, else bigint. */
export type GGUFValue = number | bigint | boolean | string | GGUFValue[];

/** GGUF metadata value type ids (gguf spec `gguf_metadata_value_type`). */
export const GGUF_VALUE_TYPE = {
  UINT8: 0,
  INT8: 1,
  UINT16: 2,
  INT16: 3,
  UINT32: 4,
  INT32: 5,
  FLOAT32: 6,
  BOOL: 7,
  STRING: 8,
  ARRAY: 9,
  UINT64: 10,
  INT64: 11,
  FLOAT64: 12,
} as const;

/** Minimum encoded size of one value of each type, to bound array counts before allocating. */
const MIN_BYTES = [1, 1, 2, 2, 4, 4, 4, 1, 8, 12, 8, 8, 8];
/** ggml's GGML_MAX_DIMS. */
const MAX_DIMS = 4;
/** Default `general.alignment`. */
export const GGUF_DEFAULT_ALIGNMENT = 32;

/** A GGUF tensor directory entry. */
export interface GGUFTensorInfo extends TensorInfo {
  /** GGML type name (same as `dtype`); `format` decodes it. */
  readonly dtype: QuantFormat["name"];
  /** ggml's dims, fastest first: `ggmlDims[0]` is the row length; `shape` is this reversed. */
  readonly ggmlDims: readonly number[];
  /** GGML type id. */
  readonly ggmlType: number;
  /** The storage format (block geometry, layout, reference decoder). */
  readonly format: QuantFormat;
  /** Offset relative to the data section, as stored. */
  readonly relativeOffset: number;
}

/** Parsed GGUF header. */
export interface GGUFHeader {
  /** Format version (2 or 3). */
  readonly version: number;
  /** Metadata in file order. */
  readonly metadata: ReadonlyMap<string, GGUFValue>;
  /** Tensor directory in file order. */
  readonly tensors: GGUFTensorInfo[];
  /** `general.alignment` or 32. */
  readonly alignment: number;
  /** Absolute offset of the data section. */
  readonly dataOffset: number;
}

function readValue(r: HeaderReader, type: number, key: string, depth: number): GGUFValue {
  switch (type) {
    case 0:
      return r.u8();
    case 1:
      return r.i8();
    case 2:
      return r.u16();
    case 3:
      return r.i16();
    case 4:
      return r.u32();
    case 5:
      return r.i32();
    case 6:
      return r.f32();
    case 7: {
      const at = r.pos;
      const b = r.u8("bool");
      if (b > 1)
        throw new CheckpointFormatError("bad-header", `bool value ${b}`, { file: r.src.label, offset: at, key });
      return b === 1;
    }
    case 8:
      return r.string(`value of ${key}`);
    case 9: {
      const at = r.pos;
      const elemType = r.u32("array type");
      const count = r.u64("array length");
      if (elemType > 12 || (elemType === 9 && depth > 4)) {
        throw new CheckpointFormatError("bad-header", `array element type ${elemType}`, {
          file: r.src.label,
          offset: at,
          key,
        });
      }
      r.need(count * MIN_BYTES[elemType]!, `array of ${count}`);
      if (elemType === 8) {
        // A vocabulary's strings: one description for all of them, made once (not a template string per element).
        return r.strings(count, `value of ${key}`);
      }
      const out: GGUFValue[] = new Array(count);
      for (let i = 0; i < count; i++) out[i] = readValue(r, elemType, key, depth + 1);
      return out;
    }
    case 10: {
      const v = r.u64Big();
      return v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v;
    }
    case 11: {
      const v = r.i64Big();
      return v <= BigInt(Number.MAX_SAFE_INTEGER) && v >= BigInt(Number.MIN_SAFE_INTEGER) ? Number(v) : v;
    }
    case 12:
      return r.f64();
    default:
      throw new CheckpointFormatError("bad-header", `unknown metadata value type ${type}`, {
        file: r.src.label,
        offset: r.pos - 4,
        key,
      });
  }
}

/** Parses and validates a GGUF header from any byte source (reads the header only, never tensor data). */
export function parseGGUFHeader(src: ByteSource): GGUFHeader {
  const file = src.label;
  const r = new HeaderReader(src);
  const magic = r.u32("magic");
  if (magic !== 0x46554747)
    throw new CheckpointFormatError("bad-magic", `magic 0x${magic.toString(16)} is not "GGUF"`, { file, offset: 0 });
  const version = r.u32("version");
  if (version !== 2 && version !== 3)
    throw new CheckpointFormatError("unsupported-version", `GGUF version ${version} (only 2 and 3)`, {
      file,
      offset: 4,
      value: version,
    });
  const tensorCount = r.u64("tensor count");
  const kvCount = r.u64("metadata count");
  // Each KV takes >= 8+4 bytes and each tensor info >= 8+4+4+8: reject counts the file cannot hold.
  r.need(kvCount * 12 + tensorCount * 24, `${kvCount} metadata entries and ${tensorCount} tensors`);
  const metadata = new Map<string, GGUFValue>();
  for (let i = 0; i < kvCount; i++) {
    const at = r.pos;
    const key = r.string("metadata key");
    const type = r.u32("value type");
    if (metadata.has(key))
      throw new CheckpointFormatError("bad-header", "duplicate metadata key", { file, offset: at, key });
    metadata.set(key, readValue(r, type, key, 0));
  }
  let alignment = GGUF_DEFAULT_ALIGNMENT;
  const al = metadata.get("general.alignment");
  if (al !== undefined) {
    if (typeof al !== "number" || !Number.isInteger(al) || al <= 0 || (al & (al - 1)) !== 0 || al > 1 << 20) {
      throw new CheckpointFormatError("bad-header", `general.alignment ${String(al)} is not a power of two`, {
        file,
        key: "general.alignment",
        value: al,
      });
    }
    alignment = al;
  }
  const raw: { name: string; dims: number[]; type: number; rel: number; at: number }[] = [];
  const names = new Set<string>();
  for (let i = 0; i < tensorCount; i++) {
    const at = r.pos;
    const name = r.string("tensor name");
    if (names.has(name))
      throw new CheckpointFormatError("bad-header", "duplicate tensor name", { file, offset: at, tensor: name });
    names.add(name);
    const nDims = r.u32("n_dims");
    if (nDims > MAX_DIMS)
      throw new CheckpointFormatError("bad-shape", `${nDims} dims (max ${MAX_DIMS})`, {
        file,
        offset: at,
        tensor: name,
      });
    const dims: number[] = [];
    for (let d = 0; d < nDims; d++) dims.push(r.u64("dim"));
    raw.push({ name, dims, type: r.u32("tensor type"), rel: r.u64("tensor offset"), at });
  }
  const dataOffset = Math.ceil(r.pos / alignment) * alignment;
  const dataSize = src.size - dataOffset;
  const tensors: GGUFTensorInfo[] = [];
  for (const t of raw) {
    const format = formatById(t.type);
    if (format === undefined) {
      throw new UnsupportedTensorTypeError(
        "unsupported-dtype",
        `tensor type ${ggmlTypeName(t.type)} (ggml type id ${t.type}) is not supported`,
        { file, tensor: t.name, offset: t.at, value: t.type },
      );
    }
    let n = 1;
    for (const d of t.dims) n *= d;
    const row = t.dims[0] ?? 1;
    if (!Number.isSafeInteger(n) || row % format.blockElems !== 0) {
      throw new CheckpointFormatError(
        "bad-shape",
        `dims [${t.dims.join(", ")}] do not fit ${format.name} blocks of ${format.blockElems}`,
        { file, tensor: t.name, offset: t.at },
      );
    }
    const byteLength = (n / format.blockElems) * format.blockBytes;
    if (t.rel % alignment !== 0)
      throw new CheckpointFormatError("misaligned", `offset ${t.rel} is not a multiple of ${alignment}`, {
        file,
        tensor: t.name,
        offset: dataOffset + t.rel,
      });
    if (t.rel + byteLength > dataSize) {
      throw new CheckpointFormatError(
        "out-of-bounds",
        `data [${t.rel}, ${t.rel + byteLength}) past the data section (${dataSize} bytes)`,
        { file, tensor: t.name, offset: dataOffset + t.rel },
      );
    }
    tensors.push({
      name: t.name,
      dtype: format.name,
      shape: [...t.dims].reverse(),
      ggmlDims: t.dims,
      ggmlType: t.type,
      format,
      byteOffset: dataOffset + t.rel,
      byteLength,
      file,
      relativeOffset: t.rel,
    });
  }
  const sorted = [...tensors].sort((a, b) => a.byteOffset - b.byteOffset || a.byteLength - b.byteLength);
  for (let i = 1; i < sorted.length; i++) {
    const p = sorted[i - 1]!,
      c = sorted[i]!;
    if (c.byteOffset < p.byteOffset + p.byteLength)
      throw new CheckpointFormatError("overlap", `overlaps tensor ${p.name}`, {
        file,
        tensor: c.name,
        offset: c.byteOffset,
      });
  }
  return { version, metadata, tensors, alignment, dataOffset };
}

/** An opened GGUF file: header parsed, tensor data left on disk and read on demand (packed). */
export class GGUFCheckpoint implements Checkpoint {
  readonly format = "gguf" as const;
  /** GGUF version. */
  readonly version: number;
  /** Metadata key-values. */
  readonly metadata: ReadonlyMap<string, GGUFValue>;
  /** Data alignment. */
  readonly alignment: number;
  /** Absolute offset of the data section. */
  readonly dataOffset: number;
  private readonly list: GGUFTensorInfo[];
  private readonly byName: Map<string, GGUFTensorInfo>;
  private src: ByteSource | undefined;

  /** Wraps an already-open byte source (see {@link openGGUF} for files). */
  constructor(src: ByteSource) {
    const h = parseGGUFHeader(src);
    this.src = src;
    this.version = h.version;
    this.metadata = h.metadata;
    this.alignment = h.alignment;
    this.dataOffset = h.dataOffset;
    this.list = h.tensors;
    this.byName = new Map(h.tensors.map((t) => [t.name, t]));
  }
  /** File path or label. */
  get path(): string {
    return this.list[0]?.file ?? this.source().label;
  }
  private source(): ByteSource {
    if (this.src === undefined) throw new ModelError("closed", "checkpoint is closed");
    return this.src;
  }
  tensors(): readonly GGUFTensorInfo[] {
    return this.list;
  }
  has(name: string): boolean {
    return this.byName.has(name);
  }
  info(name: string): GGUFTensorInfo {
    const t = this.byName.get(name);
    if (t === undefined) throw new MissingTensorError(name, this.source().label);
    return t;
  }
  read(name: string): Promise<Uint8Array> {
    const t = this.info(name);
    return this.source().read(t.byteOffset, t.byteLength);
  }
  readSync(name: string): Uint8Array {
    const t = this.info(name);
    return this.source().readSync(t.byteOffset, t.byteLength);
  }
  readInto(name: string, dst: Uint8Array): void {
    this.source().readInto(this.info(name).byteOffset, dst);
  }
  locate(name: string): FileRange | undefined {
    const t = this.info(name);
    return this.source().fileRange?.(t.byteOffset, t.byteLength);
  }
  async readF32(name: string): Promise<Float32Array> {
    return decodePacked(this.info(name).format, await this.read(name));
  }
  readF32Sync(name: string): Float32Array {
    return decodePacked(this.info(name).format, this.readSync(name));
  }
  /** A metadata value, or undefined. */
  get(key: string): GGUFValue | undefined {
    return this.metadata.get(key);
  }
  close(): void {
    this.src?.close();
    this.src = undefined;
  }
}

/** Opens a `.gguf` file, reading and validating only its header. */
export function openGGUF(file: string): GGUFCheckpoint {
  const src = new FileSource(file);
  try {
    return new GGUFCheckpoint(src);
  } catch (e) {
    src.close();
    throw e;
  }
}
