// safetensors reader: single files and sharded folders (model.safetensors.index.json).
// The JSON header is parsed and validated at open; tensor bytes are read lazily by positioned reads.
import * as fs from "node:fs";
import * as path from "node:path";
import { numel, type Checkpoint, type TensorInfo } from "./checkpoint.js";
import {
  CheckpointFormatError,
  MissingTensorError,
  ModelError,
  UnsupportedTensorTypeError,
  ioError,
} from "./errors.js";
import { copyF32, widenBF16, widenF16 } from "./halfs.js";
import { FileSource, MemorySource, type ByteSource, type FileRange } from "./source.js";

/** safetensors dtypes this reader accepts, with their element sizes in bytes. */
export const SAFETENSORS_DTYPE_BYTES = {
  F64: 8,
  F32: 4,
  F16: 2,
  BF16: 2,
  I64: 8,
  I32: 4,
  I16: 2,
  I8: 1,
  U64: 8,
  U32: 4,
  U16: 2,
  U8: 1,
  BOOL: 1,
  F8_E4M3: 1,
} as const;

/** A safetensors dtype name. */
export type SafetensorsDType = keyof typeof SAFETENSORS_DTYPE_BYTES;

/** Largest JSON header accepted (the format's own reference limit is 100 MB). */
const MAX_HEADER_BYTES = 100_000_000;

/** Parsed header of one safetensors file. */
export interface SafetensorsHeader {
  /** Tensors with absolute offsets, in data order. */
  readonly tensors: TensorInfo[];
  /** The optional `__metadata__` string map. */
  readonly metadata: Record<string, string>;
  /** Absolute offset where tensor data starts (8 + header length). */
  readonly dataStart: number;
}

function isDType(s: unknown): s is SafetensorsDType {
  return typeof s === "string" && Object.hasOwn(SAFETENSORS_DTYPE_BYTES, s);
}

/** Parses and validates the header of a safetensors file from any byte source (reads the header only). */
export function parseSafetensorsHeader(src: ByteSource): SafetensorsHeader {
  const file = src.label;
  const fail = (
    msg: string,
    offset: number,
    tensor?: string,
    code: "bad-header" | "bad-json" | "truncated" | "out-of-bounds" | "overlap" | "bad-shape" = "bad-header",
  ) => new CheckpointFormatError(code, msg, { file, offset, tensor });
  if (src.size < 8)
    throw fail(`file is ${src.size} bytes, shorter than the 8-byte header length`, 0, undefined, "truncated");
  const lenBytes = src.readSync(0, 8);
  const len = Number(new DataView(lenBytes.buffer).getBigUint64(0, true));
  if (len > src.size - 8)
    throw fail(`header length ${len} exceeds the file (${src.size} bytes)`, 0, undefined, "truncated");
  if (len > MAX_HEADER_BYTES) throw fail(`header length ${len} exceeds ${MAX_HEADER_BYTES}`, 0);
  const dataStart = 8 + len;
  let json: unknown;
  try {
    json = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(src.readSync(8, len)));
  } catch (cause) {
    if (cause instanceof ModelError) throw cause;
    throw new CheckpointFormatError(
      "bad-json",
      `header is not valid UTF-8 JSON: ${(cause as Error).message}`,
      { file, offset: 8 },
      { cause },
    );
  }
  if (typeof json !== "object" || json === null || Array.isArray(json))
    throw fail("header JSON is not an object", 8, undefined, "bad-json");
  const dataSize = src.size - dataStart;
  const tensors: TensorInfo[] = [];
  let metadata: Record<string, string> = {};
  for (const [name, entry] of Object.entries(json)) {
    if (name === "__metadata__") {
      if (
        typeof entry !== "object" ||
        entry === null ||
        Array.isArray(entry) ||
        !Object.values(entry).every((v) => typeof v === "string")
      ) {
        throw fail("__metadata__ must map strings to strings", 8, undefined, "bad-json");
      }
      metadata = entry as Record<string, string>;
      continue;
    }
    if (typeof entry !== "object" || entry === null) throw fail("entry is not an object", 8, name, "bad-json");
    const { dtype, shape, data_offsets: offs } = entry as Record<string, unknown>;
    if (!isDType(dtype)) {
      throw new UnsupportedTensorTypeError("unsupported-dtype", `unsupported dtype ${JSON.stringify(dtype)}`, {
        file,
        tensor: name,
        offset: 8,
        value: dtype,
      });
    }
    if (!Array.isArray(shape) || !shape.every((d) => Number.isSafeInteger(d) && d >= 0))
      throw fail("shape must be an array of non-negative integers", 8, name, "bad-shape");
    if (!Array.isArray(offs) || offs.length !== 2 || !offs.every((o) => Number.isSafeInteger(o) && o >= 0))
      throw fail("data_offsets must be [begin, end]", 8, name);
    const [begin, end] = offs as [number, number];
    if (begin > end || end > dataSize)
      throw fail(
        `data_offsets [${begin}, ${end}] outside the data section (${dataSize} bytes)`,
        dataStart + begin,
        name,
        "out-of-bounds",
      );
    const expected = numel(shape) * SAFETENSORS_DTYPE_BYTES[dtype];
    if (expected !== end - begin)
      throw fail(
        `shape [${shape.join(", ")}] × ${dtype} is ${expected} bytes but data_offsets span ${end - begin}`,
        dataStart + begin,
        name,
        "bad-shape",
      );
    tensors.push({
      name,
      dtype,
      shape: shape as number[],
      byteOffset: dataStart + begin,
      byteLength: end - begin,
      file,
    });
  }
  tensors.sort((a, b) => a.byteOffset - b.byteOffset || a.byteLength - b.byteLength);
  for (let i = 1; i < tensors.length; i++) {
    const prev = tensors[i - 1]!;
    const cur = tensors[i]!;
    if (cur.byteOffset < prev.byteOffset + prev.byteLength)
      throw fail(`overlaps tensor ${prev.name}`, cur.byteOffset, cur.name, "overlap");
  }
  return { tensors, metadata, dataStart };
}

/** Widens stored bytes of a float dtype to f32; integer dtypes are a typed `wrong-dtype` error. */
export function toF32(info: TensorInfo, bytes: Uint8Array): Float32Array {
  switch (info.dtype) {
    case "F32":
      return copyF32(bytes);
    case "F16":
      return widenF16(bytes);
    case "BF16":
      return widenBF16(bytes);
    case "F64": {
      // Rounds to nearest f32: f64 checkpoints are converted, not computed in.
      const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
      const out = new Float32Array(bytes.byteLength / 8);
      for (let i = 0; i < out.length; i++) out[i] = dv.getFloat64(8 * i, true);
      return out;
    }
    default:
      throw new ModelError("wrong-dtype", `tensor of dtype ${info.dtype} cannot be read as f32`, {
        file: info.file,
        tensor: info.name,
        offset: info.byteOffset,
        value: info.dtype,
      });
  }
}

/** Options of {@link openSafetensors}. */
export interface OpenSafetensorsOptions {
  /** For a folder: the file to open when not sharded (default `model.safetensors`; e.g. `model.bf16.safetensors`). */
  readonly fileName?: string;
}

/** An opened safetensors checkpoint (one file or all shards of a sharded folder). */
export class SafetensorsCheckpoint implements Checkpoint {
  readonly format = "safetensors" as const;
  private readonly byName = new Map<string, TensorInfo>();
  private readonly list: TensorInfo[] = [];

  /** @internal Use {@link openSafetensors}. */
  constructor(
    readonly path: string,
    private readonly sources: Map<string, ByteSource>,
    /** `__metadata__` merged over all files. */
    readonly metadata: Record<string, string>,
    headers: SafetensorsHeader[],
  ) {
    for (const h of headers)
      for (const t of h.tensors) {
        if (this.byName.has(t.name))
          throw new CheckpointFormatError("overlap", "tensor defined in two shards", {
            file: t.file,
            tensor: t.name,
            offset: t.byteOffset,
          });
        this.byName.set(t.name, t);
        this.list.push(t);
      }
  }

  tensors(): readonly TensorInfo[] {
    return this.list;
  }
  has(name: string): boolean {
    return this.byName.has(name);
  }
  info(name: string): TensorInfo {
    const t = this.byName.get(name);
    if (t === undefined) throw new MissingTensorError(name, this.path);
    return t;
  }
  private source(t: TensorInfo): ByteSource {
    const s = this.sources.get(t.file);
    if (s === undefined) throw new ModelError("closed", "checkpoint is closed", { file: t.file, tensor: t.name });
    return s;
  }
  read(name: string): Promise<Uint8Array> {
    const t = this.info(name);
    return this.source(t).read(t.byteOffset, t.byteLength);
  }
  readSync(name: string): Uint8Array {
    const t = this.info(name);
    return this.source(t).readSync(t.byteOffset, t.byteLength);
  }
  readInto(name: string, dst: Uint8Array): void {
    const t = this.info(name);
    this.source(t).readInto(t.byteOffset, dst);
  }
  locate(name: string): FileRange | undefined {
    const t = this.info(name);
    return this.source(t).fileRange?.(t.byteOffset, t.byteLength);
  }
  async readF32(name: string): Promise<Float32Array> {
    const t = this.info(name);
    return toF32(t, await this.read(name));
  }
  readF32Sync(name: string): Float32Array {
    return toF32(this.info(name), this.readSync(name));
  }
  close(): void {
    for (const s of this.sources.values()) s.close();
    this.sources.clear();
  }
}

function readIndex(indexPath: string): Record<string, string> {
  let json: unknown;
  try {
    json = JSON.parse(fs.readFileSync(indexPath, "utf8"));
  } catch (cause) {
    throw new CheckpointFormatError(
      "bad-json",
      `cannot read shard index: ${(cause as Error).message}`,
      { file: indexPath },
      { cause },
    );
  }
  const map = (json as { weight_map?: unknown } | null)?.weight_map;
  if (
    typeof map !== "object" ||
    map === null ||
    !Object.values(map).every((v) => typeof v === "string" && !v.includes("/") && !v.includes("\\"))
  ) {
    throw new CheckpointFormatError("bad-json", "weight_map must map tensor names to shard file names", {
      file: indexPath,
      key: "weight_map",
    });
  }
  return map as Record<string, string>;
}

/** A safetensors checkpoint over the bytes of one file held in memory (a browser's fetch, a test's buffer). */
export function safetensorsFromBytes(bytes: Uint8Array, label = "<memory>"): SafetensorsCheckpoint {
  const src = new MemorySource(bytes, label);
  const header = parseSafetensorsHeader(src);
  return new SafetensorsCheckpoint(label, new Map([[label, src]]), header.metadata, [header]);
}

/** A folder without the weight file asked for: names the weight files it has, and which `weights` option reads them. */
function missingWeights(folder: string, fileName: string): ModelError {
  const which: Record<string, string> = { "model.safetensors": "f32", "model.bf16.safetensors": "bf16" };
  const present = fs
    .readdirSync(folder)
    .filter((f) => which[f] !== undefined)
    .map((f) => `${f}: weights ${which[f]}`);
  const has = present.length === 0 ? "" : ` (it has ${present.join(", ")})`;
  return new ModelError("io", `no ${fileName} in the model folder${has}`, { file: path.join(folder, fileName) });
}

/**
 * Opens a safetensors checkpoint: a `.safetensors` file, or a folder holding `model.safetensors.index.json`
 * (sharded) or `model.safetensors` (or `options.fileName`). Only headers are read.
 */
export function openSafetensors(pathOrFolder: string, options: OpenSafetensorsOptions = {}): SafetensorsCheckpoint {
  let files: string[];
  let isDir: boolean;
  let weightMap: Record<string, string> | undefined;
  try {
    isDir = fs.statSync(pathOrFolder).isDirectory();
  } catch (cause) {
    throw ioError(cause, pathOrFolder, "stat");
  }
  if (isDir) {
    const index = path.join(pathOrFolder, "model.safetensors.index.json");
    if (options.fileName === undefined && fs.existsSync(index)) {
      weightMap = readIndex(index);
      files = [...new Set(Object.values(weightMap))].map((f) => path.join(pathOrFolder, f));
    } else {
      const fileName = options.fileName ?? "model.safetensors";
      files = [path.join(pathOrFolder, fileName)];
      if (!fs.existsSync(files[0]!)) throw missingWeights(pathOrFolder, fileName);
    }
  } else files = [pathOrFolder];
  const sources = new Map<string, ByteSource>();
  try {
    const headers = files.map((f) => {
      const src = new FileSource(f);
      sources.set(f, src);
      return parseSafetensorsHeader(src);
    });
    const metadata = Object.assign({}, ...headers.map((h) => h.metadata)) as Record<string, string>;
    const ck = new SafetensorsCheckpoint(pathOrFolder, sources, metadata, headers);
    // The index must agree with the shards: every mapped tensor lives in the shard it names.
    for (const [name, shard] of Object.entries(weightMap ?? {})) {
      const file = path.join(pathOrFolder, shard);
      if (!ck.has(name)) throw new MissingTensorError(name, file);
      if (ck.info(name).file !== file)
        throw new CheckpointFormatError("bad-header", `index maps it to ${shard} but it is in ${ck.info(name).file}`, {
          file,
          tensor: name,
        });
    }
    return ck;
  } catch (e) {
    for (const s of sources.values()) s.close();
    throw e;
  }
}
