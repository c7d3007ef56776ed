// Regenerates the float32 `model.safetensors` of the fixtures/hf families that the repository stores only in bf16
// (fixtures/generated.json entries with "type": "safetensors-f32"): every value is bf16-exact, so widening the
// bf16 file gives the float32 tensors transformers saved, written the way its save_pretrained (the safetensors
// library) lays them out: `__metadata__` {"format":"pt"} first, tensors sorted by name, compact JSON padded with
// spaces to 8 bytes; a tied lm_head (tie_word_embeddings) is not saved.
import * as fs from "node:fs";
import * as path from "node:path";
// Module imports, not the package index: the script then runs with no other workspace package built.
import { openSafetensors } from "../src/safetensors.js";

/** One regenerated safetensors file, as fixtures/generated.json records it. */
export interface GeneratedSafetensors {
  /** Path of the file under fixtures/. */
  readonly path: string;
  /** "safetensors-f32". */
  readonly type: "safetensors-f32";
  /** The bf16 safetensors file under fixtures/ it is widened from. */
  readonly from: string;
  /** Size of the original file in bytes. */
  readonly bytes: number;
  /** sha256 (hex) of the original file. */
  readonly sha256: string;
  /**
   * DeepSeek-V2: save_pretrained wrote the experts one tensor each (`mlp.experts.E.{gate,up,down}_proj.weight`)
   * while the bf16 state dict stacks them (`gate_up_proj` [E, 2F, D], gate rows first; `down_proj` [E, D, F]).
   */
  readonly unfuseExperts?: boolean;
}

/** A widened tensor: name, shape and f32 bytes. */
interface Widened {
  readonly name: string;
  readonly shape: readonly number[];
  readonly bytes: Uint8Array;
}

/** bf16 -> f32 is exact: the bf16 bits are the high half of the f32 bits (little-endian). */
function widen(bits: Uint8Array): Uint8Array {
  const n = bits.byteLength / 2;
  const out = new Uint8Array(n * 4);
  for (let i = 0; i < n; i++) {
    out[4 * i + 2] = bits[2 * i]!;
    out[4 * i + 3] = bits[2 * i + 1]!;
  }
  return out;
}

/** Splits stacked experts [E, rows, cols] (f32 bytes) into per-expert tensors, `rows` cut at `cut` when given. */
function unstack(prefix: string, t: Widened, roles: readonly [string, number, number][]): Widened[] {
  const [E, rows, cols] = t.shape as [number, number, number];
  const out: Widened[] = [];
  for (let e = 0; e < E; e++) {
    for (const [role, r0, r1] of roles) {
      const start = (e * rows + r0) * cols * 4,
        end = (e * rows + r1) * cols * 4;
      out.push({ name: `${prefix}.${e}.${role}.weight`, shape: [r1 - r0, cols], bytes: t.bytes.slice(start, end) });
    }
  }
  return out;
}

/** The float32 safetensors bytes `spec` describes, from the fixtures folder `root`. */
export function buildFixtureSafetensors(root: string, spec: GeneratedSafetensors): Uint8Array {
  const src = path.join(root, spec.from);
  const cfg = JSON.parse(fs.readFileSync(path.join(path.dirname(src), "config.json"), "utf8")) as Record<
    string,
    unknown
  >;
  const st = openSafetensors(src);
  try {
    let tensors: Widened[] = [];
    for (const t of st.tensors()) {
      if (t.name === "lm_head.weight" && cfg["tie_word_embeddings"] === true) continue;
      if (t.dtype !== "BF16") throw new Error(`${spec.from}: tensor ${t.name} is ${t.dtype}, expected BF16`);
      const w: Widened = { name: t.name, shape: t.shape, bytes: widen(st.readSync(t.name)) };
      const m = /^(.*\.mlp\.experts)\.(gate_up_proj|down_proj)$/.exec(t.name);
      if (spec.unfuseExperts === true && m !== null) {
        const rows = t.shape[1]!;
        tensors.push(
          ...unstack(
            m[1]!,
            w,
            m[2] === "gate_up_proj"
              ? [
                  ["gate_proj", 0, rows / 2],
                  ["up_proj", rows / 2, rows],
                ]
              : [["down_proj", 0, rows]],
          ),
        );
      } else tensors.push(w);
    }
    tensors = tensors.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    const header: Record<string, unknown> = { __metadata__: { format: "pt" } };
    const parts: Uint8Array[] = [];
    let offset = 0;
    for (const t of tensors) {
      header[t.name] = { dtype: "F32", shape: t.shape, data_offsets: [offset, offset + t.bytes.byteLength] };
      offset += t.bytes.byteLength;
      parts.push(t.bytes);
    }
    let json = JSON.stringify(header);
    json += " ".repeat((8 - (json.length % 8)) % 8);
    const head = new TextEncoder().encode(json);
    const file = new Uint8Array(8 + head.byteLength + offset);
    new DataView(file.buffer).setBigUint64(0, BigInt(head.byteLength), true);
    file.set(head, 8);
    let at = 8 + head.byteLength;
    for (const p of parts) {
      file.set(p, at);
      at += p.byteLength;
    }
    return file;
  } finally {
    st.close();
  }
}
