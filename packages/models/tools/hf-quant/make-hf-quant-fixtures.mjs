// Makes fixtures/hf/llama3-{gptq,awq,fp8}: the llama3 fixture's linear weights quantized into GPTQ (v1, act-order),
// AutoAWQ GEMM and FP8 e4m3 checkpoints, with the float64 forward of their dequantized weights as the reference.
// Usage: node make-hf-quant-fixtures.mjs <fixtures dir>
//
// Nothing here imports @poot/models: the packers follow the published layouts (AutoGPTQ's qweight [in/8, out] with
// zeros stored minus one, AutoAWQ's GEMM order [0, 2, 4, 6, 1, 3, 5, 7], OCP e4m3 "fn" with tensor / channel /
// 128×128-style block scales), and the float64 dequantizers unpack the stored words again by those specs. The
// float64 llama3 forward is checked against transformers' float64 logits of the unquantized fixture first.
import * as crypto from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";

const root = process.argv[2];
if (!root) throw new Error("usage: node make-hf-quant-fixtures.mjs <fixtures dir>");
const SRC = path.join(root, "hf", "llama3");

// ── safetensors in and out ──
function readST(file) {
  const b = fs.readFileSync(file);
  const n = Number(b.readBigUInt64LE(0));
  const h = JSON.parse(b.subarray(8, 8 + n).toString("utf8"));
  const out = {};
  for (const [k, v] of Object.entries(h)) {
    if (k === "__metadata__") continue;
    const bytes = b.subarray(8 + n + v.data_offsets[0], 8 + n + v.data_offsets[1]);
    out[k] = { dtype: v.dtype, shape: v.shape, bytes };
  }
  return out;
}
function toF64(t) {
  const n = t.shape.reduce((a, d) => a * d, 1);
  const o = new Float64Array(n);
  const dv = new DataView(t.bytes.buffer, t.bytes.byteOffset, t.bytes.byteLength);
  for (let i = 0; i < n; i++) o[i] = t.dtype === "F32" ? dv.getFloat32(4 * i, true) : bf16(dv.getUint16(2 * i, true));
  return o;
}
function writeST(file, tensors) {
  const header = {};
  let off = 0;
  const parts = [];
  for (const [name, { dtype, shape, bytes }] of Object.entries(tensors)) {
    header[name] = { dtype, shape, data_offsets: [off, off + bytes.byteLength] };
    parts.push(bytes);
    off += bytes.byteLength;
  }
  let json = JSON.stringify(header);
  while ((8 + json.length) % 8 !== 0) json += " ";
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(json.length));
  fs.writeFileSync(
    file,
    Buffer.concat([len, Buffer.from(json), ...parts.map((p) => Buffer.from(p.buffer, p.byteOffset, p.byteLength))]),
  );
}

// ── half floats ──
const f32b = new Float32Array(1),
  u32b = new Uint32Array(f32b.buffer);
function bf16(bits) {
  u32b[0] = bits << 16;
  return f32b[0];
}
function f16(bits) {
  const s = bits & 0x8000 ? -1 : 1,
    e = (bits >> 10) & 31,
    m = bits & 1023;
  if (e === 0) return s * m * 2 ** -24;
  return s * (1 + m / 1024) * 2 ** (e - 15);
}
/** Rounds a positive normal value to the nearest f16 and returns [value, bits]. */
function toF16(x) {
  const e = Math.floor(Math.log2(x));
  let m = Math.round((x / 2 ** e - 1) * 1024);
  let ee = e;
  if (m === 1024) (m = 0), ee++;
  if (ee < -14 || ee > 15) throw new Error(`scale ${x} outside f16's normal range`);
  const bits = ((ee + 15) << 10) | m;
  return [f16(bits), bits];
}
function toBF16(x) {
  f32b[0] = x;
  const u = u32b[0];
  const bits = (u + 0x7fff + ((u >> 16) & 1)) >>> 16;
  return [bf16(bits), bits];
}

// ── float64 llama3 forward (transformers' LlamaForCausalLM, eager attention, tied embeddings) ──
function forward(cfg, W, ids) {
  const D = cfg.hidden_size,
    H = cfg.num_attention_heads,
    KV = cfg.num_key_value_heads,
    hd = cfg.head_dim,
    F = cfg.intermediate_size,
    V = cfg.vocab_size,
    T = ids.length,
    eps = cfg.rms_norm_eps;
  const rp = cfg.rope_parameters;
  const inv = [];
  for (let j = 0; j < hd / 2; j++) {
    // transformers computes the inverse frequencies in float32 even for a float64 model.
    const r = Math.fround;
    const f = r(1 / r(rp.rope_theta ** r((2 * j) / hd)));
    const wl = (2 * Math.PI) / f;
    const lowWl = rp.original_max_position_embeddings / rp.low_freq_factor,
      highWl = rp.original_max_position_embeddings / rp.high_freq_factor;
    if (wl < highWl) inv.push(f);
    else if (wl > lowWl) inv.push(r(f / rp.factor));
    else {
      const sm = r(
        r(r(rp.original_max_position_embeddings / r(wl)) - rp.low_freq_factor) /
          (rp.high_freq_factor - rp.low_freq_factor),
      );
      inv.push(r(r(r(1 - sm) * r(f / rp.factor)) + r(sm * f)));
    }
  }
  const mm = (x, w, rows, n, k) => {
    const y = new Float64Array(rows * n);
    for (let t = 0; t < rows; t++)
      for (let o = 0; o < n; o++) {
        let s = 0;
        for (let i = 0; i < k; i++) s += x[t * k + i] * w[o * k + i];
        y[t * n + o] = s;
      }
    return y;
  };
  const norm = (x, w) => {
    const y = new Float64Array(x.length);
    for (let t = 0; t < T; t++) {
      let s = 0;
      for (let i = 0; i < D; i++) s += x[t * D + i] ** 2;
      const r = 1 / Math.sqrt(s / D + eps);
      for (let i = 0; i < D; i++) y[t * D + i] = x[t * D + i] * r * w[i];
    }
    return y;
  };
  const rope = (x, heads) => {
    for (let t = 0; t < T; t++)
      for (let h = 0; h < heads; h++)
        for (let j = 0; j < hd / 2; j++) {
          // Like transformers: angles, cos and sin in float32, then widened.
          const a = Math.fround(t * inv[j]),
            c = Math.fround(Math.cos(a)),
            s = Math.fround(Math.sin(a));
          const p = t * heads * hd + h * hd;
          const x1 = x[p + j],
            x2 = x[p + j + hd / 2];
          x[p + j] = x1 * c - x2 * s;
          x[p + j + hd / 2] = x2 * c + x1 * s;
        }
  };
  const emb = W["model.embed_tokens.weight"];
  let x = new Float64Array(T * D);
  ids.forEach((id, t) => x.set(emb.subarray(id * D, id * D + D), t * D));
  for (let l = 0; l < cfg.num_hidden_layers; l++) {
    const L = (n) => W[`model.layers.${l}.${n}`];
    const h = norm(x, L("input_layernorm.weight"));
    const q = mm(h, L("self_attn.q_proj.weight"), T, H * hd, D);
    const k = mm(h, L("self_attn.k_proj.weight"), T, KV * hd, D);
    const v = mm(h, L("self_attn.v_proj.weight"), T, KV * hd, D);
    rope(q, H);
    rope(k, KV);
    const att = new Float64Array(T * H * hd);
    for (let hh = 0; hh < H; hh++) {
      const kh = Math.floor(hh / (H / KV));
      for (let t = 0; t < T; t++) {
        const sc = [];
        for (let u = 0; u <= t; u++) {
          let s = 0;
          for (let j = 0; j < hd; j++) s += q[t * H * hd + hh * hd + j] * k[u * KV * hd + kh * hd + j];
          sc.push(s / Math.sqrt(hd));
        }
        const m = Math.max(...sc);
        const e = sc.map((s) => Math.exp(s - m));
        const z = e.reduce((a, b) => a + b, 0);
        for (let u = 0; u <= t; u++)
          for (let j = 0; j < hd; j++) att[t * H * hd + hh * hd + j] += (e[u] / z) * v[u * KV * hd + kh * hd + j];
      }
    }
    const o = mm(att, L("self_attn.o_proj.weight"), T, D, H * hd);
    for (let i = 0; i < x.length; i++) x[i] += o[i];
    const h2 = norm(x, L("post_attention_layernorm.weight"));
    const g = mm(h2, L("mlp.gate_proj.weight"), T, F, D),
      u = mm(h2, L("mlp.up_proj.weight"), T, F, D);
    for (let i = 0; i < g.length; i++) g[i] = (g[i] / (1 + Math.exp(-g[i]))) * u[i];
    const d = mm(g, L("mlp.down_proj.weight"), T, D, F);
    for (let i = 0; i < x.length; i++) x[i] += d[i];
  }
  return mm(norm(x, W["model.norm.weight"]), W["lm_head.weight"] ?? emb, T, V, D);
}
function relErr(a, ref) {
  let d = 0,
    m = 0;
  for (let i = 0; i < ref.length; i++) (d = Math.max(d, Math.abs(a[i] - ref[i]))), (m = Math.max(m, Math.abs(ref[i])));
  return d / m;
}
function greedy(cfg, W, prompt, n) {
  const ids = [...prompt];
  const V = cfg.vocab_size;
  for (let g = 0; g < n; g++) {
    const lg = forward(cfg, W, ids).subarray((ids.length - 1) * V);
    let b = 0;
    for (let v = 1; v < V; v++) if (lg[v] > lg[b]) b = v;
    ids.push(b);
  }
  return ids.slice(prompt.length);
}

// ── deterministic randomness (act-order permutations) ──
let seed = 2601;
const rand = () => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0), seed / 2 ** 32);

const cfg = JSON.parse(fs.readFileSync(path.join(SRC, "config.json"), "utf8"));
const ref = JSON.parse(fs.readFileSync(path.join(SRC, "reference.json"), "utf8"));
const src = readST(path.join(SRC, "model.bf16.safetensors"));
const W0 = Object.fromEntries(Object.entries(src).map(([k, t]) => [k, toF64(t)]));
const tfLogits = toF64(readST(path.join(SRC, "reference.safetensors")).prompt_logits);
const check = relErr(forward(cfg, W0, ref.prompt_ids), tfLogits);
console.log(`float64 forward vs transformers float64 (unquantized llama3): rel ${check.toExponential(2)}`);
// 1e-6 measured (transformers rounds RoPE tables to float32; logits stored as float32); the tests allow 1e-4.
if (!(check < 1e-5)) throw new Error("the float64 forward does not reproduce transformers");
const tied = src["lm_head.weight"].bytes.equals(src["model.embed_tokens.weight"].bytes);
const LINEAR = /\.(q_proj|k_proj|v_proj|o_proj|gate_proj|up_proj|down_proj)\.weight$/;

/** Keeps the non-linear tensors (bf16), minus a tied lm_head. */
function plainTensors() {
  const out = {};
  for (const [k, t] of Object.entries(src)) if (!LINEAR.test(k) && !(tied && k === "lm_head.weight")) out[k] = t;
  return out;
}
const i32 = (a) => ({ dtype: "I32", bytes: new Uint8Array(Int32Array.from(a).buffer) });
const u16 = (a, dtype) => ({ dtype, bytes: new Uint8Array(Uint16Array.from(a).buffer) });
const f32t = (a) => ({ dtype: "F32", bytes: new Uint8Array(Float32Array.from(a).buffer) });

// ── GPTQ: asymmetric RTN per group, v1 zeros (stored minus one), act-order g_idx on layer 1 ──
// AutoGPTQ's act-order quantizes inputs in the order argsort(diag(H)), H the Hessian of the layer's input: linears
// reading the same input (q/k/v, gate/up) share it. Here a seeded shuffle per input stands in for that argsort.
const ACT_ORDERS = new Map();
function actOrder(name, inn) {
  const key = name.replace(/\.(q_proj|k_proj|v_proj)\./, ".qkv.").replace(/\.(gate_proj|up_proj)\./, ".gate_up.");
  if (!ACT_ORDERS.has(key)) {
    const order = Array.from({ length: inn }, (_, i) => i);
    for (let i = inn - 1; i > 0; i--) {
      const j = Math.floor(rand() * (i + 1));
      [order[i], order[j]] = [order[j], order[i]];
    }
    ACT_ORDERS.set(key, order);
  }
  return ACT_ORDERS.get(key);
}
function packGPTQ(w, out, inn, g, actOrderOf) {
  const G = inn / g;
  const order = actOrderOf ?? Array.from({ length: inn }, (_, i) => i);
  const gidx = new Int32Array(inn);
  order.forEach((i, j) => (gidx[i] = Math.floor(j / g)));
  const qweight = new Int32Array((inn / 8) * out),
    qzeros = new Int32Array(G * (out / 8)),
    scales = new Uint16Array(G * out);
  for (let o = 0; o < out; o++)
    for (let gr = 0; gr < G; gr++) {
      const members = [];
      for (let i = 0; i < inn; i++) if (gidx[i] === gr) members.push(i);
      const lo = Math.min(0, ...members.map((i) => w[o * inn + i])),
        hi = Math.max(0, ...members.map((i) => w[o * inn + i]));
      const [s, sbits] = toF16((hi - lo) / 15 || 1e-3);
      const z = Math.min(15, Math.max(1, Math.round(-lo / s)));
      scales[gr * out + o] = sbits;
      qzeros[gr * (out / 8) + (o >> 3)] |= (z - 1) << (4 * (o & 7));
      for (const i of members) {
        const q = Math.min(15, Math.max(0, Math.round(w[o * inn + i] / s) + z));
        qweight[(i >> 3) * out + o] |= q << (4 * (i & 7));
      }
    }
  return { qweight, qzeros, scales, gidx, G };
}
function dequantGPTQ(t, out, inn) {
  const w = new Float64Array(out * inn);
  for (let o = 0; o < out; o++)
    for (let i = 0; i < inn; i++) {
      const gr = t.gidx[i];
      const q = (t.qweight[(i >> 3) * out + o] >>> (4 * (i % 8))) & 15;
      const z = ((t.qzeros[gr * (out / 8) + Math.floor(o / 8)] >>> (4 * (o % 8))) & 15) + 1;
      w[o * inn + i] = f16(t.scales[gr * out + o]) * (q - z);
    }
  return w;
}

// ── AWQ (AutoAWQ GEMM): qweight [in, out/8], nibble k holds output 8c + ORDER[k] ──
const AWQ_ORDER = [0, 2, 4, 6, 1, 3, 5, 7];
const AWQ_REVERSE = [0, 4, 1, 5, 2, 6, 3, 7];
function packAWQ(w, out, inn, g) {
  const G = inn / g;
  const qweight = new Int32Array(inn * (out / 8)),
    qzeros = new Int32Array(G * (out / 8)),
    scales = new Uint16Array(G * out);
  const Q = new Int32Array(out * inn),
    Z = new Int32Array(G * out);
  for (let o = 0; o < out; o++)
    for (let gr = 0; gr < G; gr++) {
      const row = Array.from(w.subarray(o * inn + gr * g, o * inn + gr * g + g));
      const lo = Math.min(...row),
        hi = Math.max(...row);
      const [s, sbits] = toF16((hi - lo) / 15 || 1e-3);
      const z = Math.min(15, Math.max(0, Math.round(-lo / s)));
      scales[gr * out + o] = sbits;
      Z[gr * out + o] = z;
      for (let i = gr * g; i < gr * g + g; i++)
        Q[o * inn + i] = Math.min(15, Math.max(0, Math.round(w[o * inn + i] / s) + z));
    }
  for (let c = 0; c < out / 8; c++)
    for (let k = 0; k < 8; k++) {
      const o = 8 * c + AWQ_ORDER[k];
      for (let i = 0; i < inn; i++) qweight[i * (out / 8) + c] |= Q[o * inn + i] << (4 * k);
      for (let gr = 0; gr < G; gr++) qzeros[gr * (out / 8) + c] |= Z[gr * out + o] << (4 * k);
    }
  return { qweight, qzeros, scales, G, g };
}
function dequantAWQ(t, out, inn) {
  const w = new Float64Array(out * inn);
  for (let i = 0; i < inn; i++)
    for (let o = 0; o < out; o++) {
      const gr = Math.floor(i / t.g),
        sh = 4 * AWQ_REVERSE[o % 8];
      const q = (t.qweight[i * (out / 8) + Math.floor(o / 8)] >>> sh) & 15;
      const z = (t.qzeros[gr * (out / 8) + Math.floor(o / 8)] >>> sh) & 15;
      w[o * inn + i] = f16(t.scales[gr * out + o]) * (q - z);
    }
  return w;
}

// ── FP8 e4m3fn: value of byte b, and round-to-nearest-even encoding ──
function e4m3(b) {
  const s = b & 0x80 ? -1 : 1,
    e = (b >> 3) & 15,
    m = b & 7;
  if (e === 15 && m === 7) return NaN;
  return e === 0 ? s * (m / 8) * 2 ** -6 : s * (1 + m / 8) * 2 ** (e - 7);
}
const E4M3 = Array.from({ length: 127 }, (_, b) => [e4m3(b), b]); // non-negative finite values 0..448
function toE4M3(x) {
  const a = Math.min(Math.abs(x), 448);
  let best = E4M3[0];
  for (const c of E4M3) {
    const d = Math.abs(c[0] - a),
      db = Math.abs(best[0] - a);
    if (d < db || (d === db && (c[1] & 1) === 0)) best = c;
  }
  return best[1] | (x < 0 && best[1] !== 0 ? 0x80 : 0);
}
const BLOCK = [32, 64];
/** mode: "tensor" (F32 [1]), "channel" (BF16 [out, 1]), "block" (weight_scale_inv F32 [ceil(out/32), ceil(in/64)]). */
function packFP8(w, out, inn, mode) {
  const rows = mode === "block" ? Math.ceil(out / BLOCK[0]) : mode === "channel" ? out : 1;
  const cols = mode === "block" ? Math.ceil(inn / BLOCK[1]) : 1;
  const scopeOf = (o, i) =>
    mode === "block" ? Math.floor(o / BLOCK[0]) * cols + Math.floor(i / BLOCK[1]) : mode === "channel" ? o : 0;
  const amax = new Float64Array(rows * cols);
  for (let o = 0; o < out; o++)
    for (let i = 0; i < inn; i++) amax[scopeOf(o, i)] = Math.max(amax[scopeOf(o, i)], Math.abs(w[o * inn + i]));
  const scale = Array.from(amax, (a) => (mode === "channel" ? toBF16(a / 448) : [Math.fround(a / 448), 0]));
  const q = new Uint8Array(out * inn);
  for (let o = 0; o < out; o++)
    for (let i = 0; i < inn; i++) q[o * inn + i] = toE4M3(w[o * inn + i] / scale[scopeOf(o, i)][0]);
  return { q, scale, mode, rows, cols, scopeOf };
}
function dequantFP8(t, out, inn) {
  const w = new Float64Array(out * inn);
  // torch multiplies in float32 (weight.to(float32) * scale): one rounding of the exact product.
  for (let o = 0; o < out; o++)
    for (let i = 0; i < inn; i++) w[o * inn + i] = Math.fround(e4m3(t.q[o * inn + i]) * t.scale[t.scopeOf(o, i)][0]);
  return w;
}

const VARIANTS = {
  "llama3-gptq": {
    quantization_config: {
      quant_method: "gptq",
      bits: 4,
      group_size: 32,
      desc_act: true,
      sym: false,
      checkpoint_format: "gptq",
    },
    pack(name, w, out, inn, T) {
      const base = name.slice(0, -".weight".length);
      const t = packGPTQ(w, out, inn, 32, name.includes("layers.1.") ? actOrder(name, inn) : null);
      T[`${base}.qweight`] = { ...i32(t.qweight), shape: [inn / 8, out] };
      T[`${base}.qzeros`] = { ...i32(t.qzeros), shape: [t.G, out / 8] };
      T[`${base}.scales`] = { ...u16(t.scales, "F16"), shape: [t.G, out] };
      T[`${base}.g_idx`] = { ...i32(t.gidx), shape: [inn] };
      return dequantGPTQ(t, out, inn);
    },
  },
  "llama3-awq": {
    quantization_config: { quant_method: "awq", bits: 4, group_size: 64, zero_point: true, version: "gemm" },
    pack(name, w, out, inn, T) {
      const base = name.slice(0, -".weight".length);
      const t = packAWQ(w, out, inn, 64);
      T[`${base}.qweight`] = { ...i32(t.qweight), shape: [inn, out / 8] };
      T[`${base}.qzeros`] = { ...i32(t.qzeros), shape: [t.G, out / 8] };
      T[`${base}.scales`] = { ...u16(t.scales, "F16"), shape: [t.G, out] };
      return dequantAWQ(t, out, inn);
    },
  },
  "llama3-fp8": {
    quantization_config: { quant_method: "fp8", fmt: "e4m3", activation_scheme: "dynamic", weight_block_size: BLOCK },
    pack(name, w, out, inn, T) {
      const mode = name.includes("layers.1.") ? "block" : name.includes("self_attn") ? "tensor" : "channel";
      const t = packFP8(w, out, inn, mode);
      const base = name.slice(0, -".weight".length);
      T[name] = { dtype: "F8_E4M3", shape: [out, inn], bytes: t.q };
      if (mode === "block")
        T[`${base}.weight_scale_inv`] = { ...f32t(t.scale.map((s) => s[0])), shape: [t.rows, t.cols] };
      else if (mode === "tensor") T[`${base}.weight_scale`] = { ...f32t([t.scale[0][0]]), shape: [1] };
      else
        T[`${base}.weight_scale`] = {
          ...u16(
            t.scale.map((s) => s[1]),
            "BF16",
          ),
          shape: [out, 1],
        };
      return dequantFP8(t, out, inn);
    },
  },
};

// The first 12 prompt ids of hf/llama3 (fixture budget: 24 KB of reference logits per folder).
const PROMPT = ref.prompt_ids.slice(0, 12);
for (const [dir, variant] of Object.entries(VARIANTS)) {
  const T = plainTensors();
  const W = { ...W0 };
  if (tied) delete W["lm_head.weight"];
  const sha = {};
  for (const [name, t] of Object.entries(src)) {
    if (!LINEAR.test(name)) continue;
    const [out, inn] = t.shape;
    const deq = variant.pack(name, W0[name], out, inn, T);
    W[name] = deq;
    const asF32 = Float32Array.from(deq);
    if (asF32.some((x, i) => x !== deq[i])) throw new Error(`${dir} ${name}: a dequantized value is not f32-exact`);
    sha[name] = crypto.createHash("sha256").update(new Uint8Array(asF32.buffer)).digest("hex");
  }
  const logits = forward(cfg, W, PROMPT);
  const unq = forward(cfg, W0, PROMPT);
  const greedyIds = greedy(cfg, W, PROMPT, 16);
  const out = path.join(root, "hf", dir);
  fs.mkdirSync(out, { recursive: true });
  writeST(
    path.join(out, "model.safetensors"),
    Object.fromEntries(Object.entries(T).sort(([a], [b]) => (a < b ? -1 : 1))),
  );
  writeST(path.join(out, "reference.safetensors"), {
    prompt_logits: { ...f32t(logits), shape: [PROMPT.length, cfg.vocab_size] },
  });
  fs.writeFileSync(
    path.join(out, "config.json"),
    JSON.stringify({ ...cfg, quantization_config: variant.quantization_config }, null, 2) + "\n",
  );
  fs.writeFileSync(
    path.join(out, "reference.json"),
    JSON.stringify(
      {
        family: "llama3",
        source: "hf/llama3/model.bf16.safetensors",
        prompt_ids: PROMPT,
        greedy_ids: greedyIds,
        reference:
          "float64 forward (tools/hf-quant, checked against transformers' float64 logits of hf/llama3) of the weights dequantized in float64 from the stored packed tensors",
        vs_unquantized_rel: +relErr(logits, unq).toPrecision(4),
        dequant_sha256: sha,
      },
      null,
      1,
    ) + "\n",
  );
  console.log(
    `${dir}: ${fs.statSync(path.join(out, "model.safetensors")).size} bytes, rel vs unquantized ${relErr(logits, unq).toExponential(2)}, greedy ${greedyIds.join(",")}`,
  );
}
