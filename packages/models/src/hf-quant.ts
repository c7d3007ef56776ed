// GPTQ / AWQ int4 and FP8 e4m3 safetensors checkpoints seen as packed `<prefix>.weight` tensors: the stored parts
// (qweight, qzeros, scales, g_idx; weight + weight_scale[_inv]) are re-blocked on read into the formats of hf-formats.
import * as fs from "node:fs";
import * as path from "node:path";
import { decodePacked, type PackedFormat } from "@poot/graph-ir";
import { numel, type Checkpoint, type TensorInfo } from "./checkpoint.js";
import { ConfigError, MissingTensorError, ModelError } from "./errors.js";
import { widenFloats } from "./halfs.js";
import { checkActivations, inputQuantization, type ActivationNumerics, type HFQuantOptions } from "./hf-activations.js";
import {
  HF_BLOCK,
  hfPackedFormat,
  parseHFQuantConfig,
  type HFQuantConfig,
  type ScaleType,
} from "./quant/hf-formats.js";

const INT4_PARTS = ["qweight", "qzeros", "scales", "g_idx"] as const;
const FP8_PARTS = ["weight_scale", "weight_scale_inv", "input_scale"] as const;
const SCALE_OF: Record<string, ScaleType> = { F16: "f16", BF16: "bf16", F32: "f32" };

interface Packed {
  readonly info: TensorInfo;
  readonly format: PackedFormat;
  readonly repack: () => Uint8Array;
}

/**
 * Reads `quantization_config` from a model folder's config.json (or quantize_config.json); undefined when the
 * folder holds no quantized model. Malformed or unsupported settings are typed errors naming the key.
 */
export function readHFQuantConfig(folder: string): HFQuantConfig | undefined {
  for (const [name, pick] of [
    ["config.json", (j: Record<string, unknown>) => j["quantization_config"]],
    ["quantize_config.json", (j: Record<string, unknown>) => j],
  ] as const) {
    const file = path.join(folder, name);
    if (!fs.existsSync(file)) continue;
    let json: unknown;
    try {
      json = JSON.parse(fs.readFileSync(file, "utf8"));
    } catch (cause) {
      throw new ConfigError("bad-json", `cannot parse: ${(cause as Error).message}`, { file }, { cause });
    }
    if (typeof json !== "object" || json === null) throw new ConfigError("bad-json", "not a JSON object", { file });
    const q = parseHFQuantConfig(pick(json as Record<string, unknown>), file);
    if (q !== undefined) return q;
  }
  return undefined;
}

/** Wraps a checkpoint of a quantized HF folder (a no-op for folders without `quantization_config`). */
export function withHFQuantization(ck: Checkpoint, folder: string, options: HFQuantOptions = {}): Checkpoint {
  const plain = ck.format !== "safetensors" || !fs.statSync(folder).isDirectory();
  const q = plain ? undefined : readHFQuantConfig(folder);
  if (q === undefined) checkActivations(options.activations, undefined, ck.path);
  return q === undefined ? ck : new QuantizedHFCheckpoint(ck, q, options);
}

/**
 * A safetensors checkpoint of GPTQ, AWQ or FP8 weights: each quantized linear `<p>` is listed as one packed tensor
 * `<p>.weight` [out, in] (its parts are hidden); its bytes stay 4 or 8 bits per weight, in 32-element blocks.
 */
export class QuantizedHFCheckpoint implements Checkpoint {
  readonly format = "safetensors" as const;
  readonly path: string;
  private readonly packed = new Map<string, Packed>();
  private readonly list: TensorInfo[] = [];
  private readonly listed = new Set<string>();

  /**
   * Validates every quantized tensor's parts (shapes, dtypes) against `quant`; reads no weight data (act-order
   * `g_idx`, and with `activations: "fp8-static"` each `input_scale`, are read and checked here; see
   * {@link HFQuantOptions}).
   */
  constructor(
    private readonly inner: Checkpoint,
    readonly quant: HFQuantConfig,
    options: HFQuantOptions = {},
  ) {
    const activations = checkActivations(options.activations, quant, inner.path);
    this.path = inner.path;
    const hidden = new Set<string>();
    for (const t of inner.tensors()) {
      let base: string | undefined;
      if (quant.method !== "fp8" && t.name.endsWith(".qweight")) base = t.name.slice(0, -".qweight".length);
      if (quant.method === "fp8" && t.name.endsWith(".weight") && t.dtype === "F8_E4M3")
        base = t.name.slice(0, -".weight".length);
      if (base === undefined) continue;
      const p = quant.method === "fp8" ? this.fp8(base, quant.blockSize, activations) : this.int4(base, quant);
      this.packed.set(p.info.name, p);
      for (const part of [...INT4_PARTS, ...FP8_PARTS, "weight"]) hidden.add(`${base}.${part}`);
    }
    for (const t of inner.tensors()) if (!hidden.has(t.name)) this.list.push(t);
    for (const p of this.packed.values()) this.list.push(p.info);
    for (const t of this.list) this.listed.add(t.name);
  }

  private part(base: string, name: string, dtypes: readonly string[], rank: number): TensorInfo {
    const t = this.inner.info(`${base}.${name}`);
    const fail = (msg: string, code: "wrong-dtype" | "bad-shape") => {
      throw new ModelError(code, msg, { file: t.file, tensor: t.name, offset: t.byteOffset, value: t.shape });
    };
    if (!dtypes.includes(t.dtype)) fail(`expected ${dtypes.join(" | ")}, found ${t.dtype}`, "wrong-dtype");
    if (t.shape.length !== rank) fail(`expected a rank-${rank} tensor, found [${t.shape.join(", ")}]`, "bad-shape");
    return t;
  }

  private int4(base: string, q: Extract<HFQuantConfig, { method: "gptq" | "awq" }>): Packed {
    const qw = this.part(base, "qweight", ["I32", "U32"], 2);
    const sc = this.part(base, "scales", ["F16", "BF16", "F32"], 2);
    const qz = this.inner.has(`${base}.qzeros`) ? this.part(base, "qzeros", ["I32", "U32"], 2) : undefined;
    const gi = this.inner.has(`${base}.g_idx`) ? this.part(base, "g_idx", ["I32"], 1) : undefined;
    const byIn = q.layout.packAxis === "in";
    const inDim = byIn ? 8 * qw.shape[0]! : qw.shape[0]!,
      out = byIn ? qw.shape[1]! : 8 * qw.shape[1]!;
    const g = q.groupSize === -1 ? inDim : q.groupSize,
      groups = Math.ceil(inDim / g);
    const shapeFail = (t: TensorInfo, want: string): never => {
      throw new ModelError("bad-shape", `expected [${want}] for a ${out}×${inDim} weight, found [${t.shape}]`, {
        file: t.file,
        tensor: t.name,
        value: t.shape,
      });
    };
    if (inDim % HF_BLOCK !== 0 || out === 0) shapeFail(qw, `in a multiple of ${HF_BLOCK}`);
    if (sc.shape[0] !== groups || sc.shape[1] !== out) shapeFail(sc, `${groups}, ${out}`);
    if (qz !== undefined && (qz.shape[0] !== groups || qz.shape[1]! * 8 !== out))
      shapeFail(qz, `${groups}, ${out / 8}`);
    if (gi !== undefined && gi.shape[0] !== inDim) shapeFail(gi, `${inDim}`);
    if (qz === undefined && !(q.method === "gptq" && q.sym)) throw new MissingTensorError(`${base}.qzeros`, qw.file);
    const scale = SCALE_OF[sc.dtype]!;
    // Whether g_idx is act-order (not i / g) shows only in the data; every entry must name a group.
    const gidx = gi === undefined ? undefined : i32(this.inner.readSync(gi.name));
    if (gidx !== undefined)
      for (let i = 0; i < inDim; i++)
        if (!(gidx[i]! >= 0 && gidx[i]! < groups))
          throw new ModelError("bad-weight", `g_idx[${i}] = ${gidx[i]} is outside [0, ${groups})`, {
            file: gi!.file,
            tensor: gi!.name,
            offset: gi!.byteOffset + 4 * i,
          });
    const groupOf = gidx === undefined ? (i: number) => Math.floor(i / g) : (i: number) => gidx[i]!;
    // Act-order (exllama's route): inputs sorted by group make each group contiguous, so the weight is plain grouped
    // int4 with its columns in that order and the traced linear gathers x the same way. A grouping whose sorted
    // groups do not fill whole 32-blocks keeps a (scale, zero) per element instead.
    const order = groupOrder(inDim, groupOf);
    const plain = order !== null;
    const inputOrder = order !== null && order.some((v, k) => v !== k) ? order : undefined;
    const format = hfPackedFormat(plain ? `int4zp_${scale}` : `int4zpx_${scale}`)!;
    const name = `${base}.weight`;
    const info: TensorInfo = {
      name,
      dtype: format.name,
      shape: [out, inDim],
      byteOffset: qw.byteOffset,
      byteLength: (out * inDim * format.bytesPerBlock) / HF_BLOCK,
      file: qw.file,
      ...(inputOrder === undefined ? {} : { inputOrder }),
    };
    const pos = q.layout.order.map((_, k) => 4 * q.layout.order.indexOf(k));
    const repack = (): Uint8Array => {
      const w = i32(this.inner.readSync(qw.name));
      const z = qz === undefined ? undefined : i32(this.inner.readSync(qz.name));
      const s = this.inner.readSync(sc.name);
      const sb = s.byteLength / (groups * out);
      const nib = byIn
        ? (o: number, i: number) => (w[(i >> 3) * out + o]! >>> pos[i & 7]!) & 15
        : (o: number, i: number) => (w[i * (out >> 3) + (o >> 3)]! >>> pos[o & 7]!) & 15;
      const zero =
        z === undefined
          ? () => 8
          : (gr: number, o: number) => ((z[gr * (out >> 3) + (o >> 3)]! >>> pos[o & 7]!) & 15) + q.layout.zeroOffset;
      const bytes = new Uint8Array(info.byteLength);
      const B = format.bytesPerBlock,
        qAt = B - 16;
      for (let o = 0; o < out; o++)
        for (let b = 0; b < inDim / HF_BLOCK; b++) {
          const at = (o * inDim) / HF_BLOCK + b;
          const blk = bytes.subarray(at * B, at * B + B);
          for (let e = 0; e < HF_BLOCK; e++) {
            const k = b * HF_BLOCK + e,
              i = inputOrder === undefined ? k : inputOrder[k]!,
              gr = groupOf(i);
            blk[qAt + (e >> 1)]! |= nib(o, i) << (4 * (e & 1));
            if (plain && e > 0) continue;
            // Scale bytes copied as stored; the zero as one byte (1..16 for GPTQ v1).
            blk.set(s.subarray((gr * out + o) * sb, (gr * out + o + 1) * sb), plain ? 0 : e * sb);
            blk[plain ? sb : HF_BLOCK * sb + e] = zero(gr, o);
          }
        }
      return bytes;
    };
    return { info, format, repack };
  }

  private fp8(base: string, block: readonly [number, number] | undefined, activations: ActivationNumerics): Packed {
    const w = this.part(base, "weight", ["F8_E4M3"], 2);
    const input = inputQuantization(activations, this.inner, w, block);
    const byInv = this.inner.has(`${base}.weight_scale_inv`);
    const st = this.inner.info(`${base}.${byInv ? "weight_scale_inv" : "weight_scale"}`);
    const [out, inDim] = w.shape as [number, number];
    const bad = (msg: string): never => {
      throw new ModelError("bad-shape", msg, { file: st.file, tensor: st.name, value: st.shape });
    };
    if (SCALE_OF[st.dtype] === undefined)
      throw new ModelError("wrong-dtype", `expected F32 | BF16 | F16, found ${st.dtype}`, {
        file: st.file,
        tensor: st.name,
      });
    if (inDim % HF_BLOCK !== 0) bad(`the weight's input size ${inDim} is not a multiple of ${HF_BLOCK}`);
    const n = numel(st.shape);
    // Scale of (row o, 32-block b) as an index into the scale tensor.
    let scaleAt: (o: number, b: number) => number;
    if (n === 1 && !byInv) scaleAt = () => 0;
    else if (n === out && (st.shape.length === 1 || st.shape[1] === 1) && !byInv) scaleAt = (o) => o;
    else {
      if (block === undefined) return bad("2-D weight scales need weight_block_size in quantization_config");
      const [bn, bk] = block;
      if (bk % HF_BLOCK !== 0) bad(`weight_block_size [${bn}, ${bk}]: ${bk} is not a multiple of ${HF_BLOCK}`);
      const rows = Math.ceil(out / bn),
        cols = Math.ceil(inDim / bk);
      if (st.shape.length !== 2 || st.shape[0] !== rows || st.shape[1] !== cols)
        bad(`expected [${rows}, ${cols}] block scales, found [${st.shape}]`);
      scaleAt = (o, b) => Math.floor(o / bn) * cols + Math.floor((b * HF_BLOCK) / bk);
    }
    const format = hfPackedFormat("fp8e4m3")!;
    const info: TensorInfo = {
      name: w.name,
      dtype: format.name,
      shape: [out, inDim],
      byteOffset: w.byteOffset,
      byteLength: (out * inDim * format.bytesPerBlock) / HF_BLOCK,
      file: w.file,
      ...input,
    };
    const repack = (): Uint8Array => {
      const q = this.inner.readSync(w.name);
      const scales = widenFloats(st.dtype, this.inner.readSync(st.name));
      const bytes = new Uint8Array(info.byteLength);
      const dv = new DataView(bytes.buffer);
      const B = format.bytesPerBlock;
      for (let o = 0; o < out; o++)
        for (let b = 0; b < inDim / HF_BLOCK; b++) {
          const at = ((o * inDim) / HF_BLOCK + b) * B,
            src = o * inDim + b * HF_BLOCK;
          dv.setFloat32(at, scales[scaleAt(o, b)]!, true);
          for (let e = 0; e < HF_BLOCK; e++) {
            const x = q[src + e]!;
            if ((x & 0x7f) === 0x7f)
              throw new ModelError("bad-weight", "FP8 e4m3 NaN (0x7f/0xff) in a weight", {
                file: w.file,
                tensor: w.name,
                offset: w.byteOffset + src + e,
              });
            bytes[at + 4 + e] = x;
          }
        }
      return bytes;
    };
    return { info, format, repack };
  }

  tensors(): readonly TensorInfo[] {
    return this.list;
  }
  has(name: string): boolean {
    return this.listed.has(name);
  }
  info(name: string): TensorInfo {
    const p = this.packed.get(name);
    if (p !== undefined) return p.info;
    if (!this.has(name)) throw new MissingTensorError(name, this.path);
    return this.inner.info(name);
  }
  read(name: string): Promise<Uint8Array> {
    const p = this.packed.get(name);
    return p === undefined ? this.inner.read(name) : Promise.resolve().then(p.repack);
  }
  readSync(name: string): Uint8Array {
    const p = this.packed.get(name);
    return p === undefined ? this.inner.readSync(name) : p.repack();
  }
  readInto(name: string, dst: Uint8Array): void {
    const p = this.packed.get(name);
    if (p === undefined) return this.inner.readInto(name, dst);
    const bytes = p.repack();
    if (bytes.byteLength !== dst.byteLength)
      throw new ModelError("bad-shape", `expected a ${bytes.byteLength}-byte destination, found ${dst.byteLength}`, {
        file: p.info.file,
        tensor: name,
      });
    dst.set(bytes);
  }
  async readF32(name: string): Promise<Float32Array> {
    return this.packed.has(name) ? this.readF32Sync(name) : this.inner.readF32(name);
  }
  readF32Sync(name: string): Float32Array {
    const p = this.packed.get(name);
    if (p === undefined) return this.inner.readF32Sync(name);
    const stored = Float32Array.from(decodePacked(p.format, p.repack(), numel(p.info.shape)));
    const order = p.info.inputOrder;
    if (order === undefined) return stored;
    // Values in input order: stored column k is input order[k].
    const logical = new Float32Array(stored.length);
    const inDim = order.length;
    for (let o = 0; o < stored.length / inDim; o++)
      for (let k = 0; k < inDim; k++) logical[o * inDim + order[k]!] = stored[o * inDim + k]!;
    return logical;
  }
  close(): void {
    this.inner.close();
  }
}

/**
 * Inputs sorted by group (stable): the column order that makes every group contiguous; null when a 32-block of that
 * order would span two groups (a group whose size is not a multiple of 32).
 */
function groupOrder(inDim: number, groupOf: (i: number) => number): Int32Array | null {
  const order = Int32Array.from({ length: inDim }, (_, i) => i).sort((a, b) => groupOf(a) - groupOf(b) || a - b);
  for (let k = 0; k < inDim; k += HF_BLOCK) if (groupOf(order[k]!) !== groupOf(order[k + HF_BLOCK - 1]!)) return null;
  return order;
}

function i32(bytes: Uint8Array): Int32Array {
  const own = bytes.byteOffset % 4 === 0 ? bytes : bytes.slice();
  return new Int32Array(own.buffer, own.byteOffset, own.byteLength / 4);
}
