// Makes fixtures/gguf/formats/: the F32 fixture models quantized by llama.cpp's own llama_model_quantize into each
// GGUF type poot adds, with llama.cpp's logits. Usage: node make-format-fixtures.mjs <shared gguf dir> <out dir>
//
// Per file <fam>-<TYPE>.gguf (pure: every 2-D weight in TYPE, ggml's shape fallbacks aside; Q5_K_M and MXFP4_MOE
// are llama.cpp's own mixes) it writes:
//   <fam>-<TYPE>.json        prompt ids, greedy ids (llama.cpp on this file; llama.cpp F32 on its dequantization),
//                            tensor types, sha256 of ggml's f32 dequantization of every tensor
//   <fam>-<TYPE>.llama.bin   llama.cpp's prompt logits of this file, float32 [T, V]
//   <fam>-<TYPE>.ref.bin     llama.cpp's F32 prompt logits of ggml's dequantization of this file (the forward of the
//                            stored weights without activation rounding), float32 [T, V]
import * as crypto from "node:crypto";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { FTYPE, LlamaModel, quantize } from "./llama.mjs";
import { readGGUFTensors } from "./gguf-lite.mjs";

const [src, out] = process.argv.slice(2);
if (!src || !out) throw new Error("usage: node make-format-fixtures.mjs <shared gguf dir> <out dir>");
fs.mkdirSync(out, { recursive: true });
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "llama-ref-"));

// One 256-wide file holds the four 256-element formats of the issue (fixture budget): ggml type ids per tensor role.
const K_MIX = [
  { pattern: "blk\\.0\\.attn_", type: 13 }, // Q5_K
  { pattern: "blk\\.0\\.ffn_", type: 11 }, // Q3_K
  { pattern: "blk\\.1\\.attn_", type: 10 }, // Q2_K
  { pattern: "blk\\.1\\.ffn_", type: 23 }, // IQ4_XS
  { pattern: "token_embd", type: 14 }, // Q6_K
];

/** [family, name, llama ftype, pure, tensor type overrides] */
const JOBS = [
  ["llama3", "Q4_0", FTYPE.Q4_0, true],
  ["llama3", "Q4_1", FTYPE.Q4_1, true],
  ["llama3", "Q5_0", FTYPE.Q5_0, true],
  ["llama3", "Q5_1", FTYPE.Q5_1, true],
  ["llama3", "IQ4_NL", FTYPE.IQ4_NL, true],
  ["llama3-w256", "KMIX", FTYPE.Q5_K_M, true, K_MIX],
  ["olmoe", "MXFP4_MOE", FTYPE.MXFP4_MOE, false],
];
const only = process.env.ONLY?.split(",");

function greedy(m, prompt, n) {
  m.reset();
  const V = m.nVocab;
  let logits = m.step(prompt, 0, false).subarray((prompt.length - 1) * V);
  const ids = [];
  for (let g = 0; g < n; g++) {
    let best = 0;
    for (let v = 1; v < V; v++) if (logits[v] > logits[best]) best = v;
    ids.push(best);
    if (g + 1 < n) logits = m.step([best], prompt.length + g, false);
  }
  return ids;
}

for (const [fam, name, ftype, pure, overrides = []] of JOBS) {
  if (only && !only.includes(name)) continue;
  const f32 = path.join(src, fam, "model-F32.gguf");
  const prompt = JSON.parse(fs.readFileSync(path.join(src, fam, "reference-F32.json"), "utf8")).prompt_ids;
  const file = path.join(out, `${fam}-${name}.gguf`);
  quantize(f32, file, ftype, { pure, overrides });
  const deq = path.join(tmp, `${fam}-${name}-deq.gguf`);
  quantize(file, deq, FTYPE.F32, { pure: true, allowRequantize: true });

  const types = {};
  for (const t of readGGUFTensors(file)) types[t.type] = (types[t.type] ?? 0) + 1;
  const sha = {};
  for (const t of readGGUFTensors(deq)) {
    if (t.type !== "F32") throw new Error(`${deq}: ${t.name} is ${t.type}, not F32`);
    sha[t.name] = crypto.createHash("sha256").update(t.bytes).digest("hex");
  }

  const q = new LlamaModel(file),
    r = new LlamaModel(deq);
  const ql = q.step(prompt, 0),
    rl = r.step(prompt, 0);
  const qg = greedy(q, prompt, 16),
    rg = greedy(r, prompt, 16);
  const V = q.nVocab;
  q.close();
  r.close();
  fs.writeFileSync(path.join(out, `${fam}-${name}.llama.bin`), Buffer.from(ql.buffer));
  fs.writeFileSync(path.join(out, `${fam}-${name}.ref.bin`), Buffer.from(rl.buffer));
  let d = 0,
    mref = 0,
    agree = 0;
  for (let i = 0; i < rl.length; i++) {
    d = Math.max(d, Math.abs(ql[i] - rl[i]));
    mref = Math.max(mref, Math.abs(rl[i]));
  }
  const argmax = (a, t) => {
    let b = 0;
    for (let v = 1; v < V; v++) if (a[t * V + v] > a[t * V + b]) b = v;
    return b;
  };
  for (let t = 0; t < prompt.length; t++) if (argmax(ql, t) === argmax(rl, t)) agree++;
  const json = {
    family: fam,
    type: name,
    gguf: `${fam}-${name}.gguf`,
    source: `${fam}/model-F32.gguf`,
    llama_ftype: ftype,
    pure,
    tensor_type_overrides: overrides.length > 0 ? overrides : undefined,
    tensor_types: types,
    prompt_ids: prompt,
    vocab: V,
    llama_cpp_greedy_ids: qg,
    reference_greedy_ids: rg,
    llama_cpp_vs_reference: { rel_max: +(d / mref).toPrecision(4), prompt_argmax_agree: agree },
    dequant_sha256: sha,
    engine:
      "llama.cpp as built in @node-llama-cpp/linux-x64 3.21.1 (CPU, 2 threads, F32 KV cache, flash attention off)",
    note: "reference = llama.cpp's F32 forward of ggml's own f32 dequantization of this file (llama_model_quantize to ALL_F32 with allow_requantize)",
  };
  fs.writeFileSync(path.join(out, `${fam}-${name}.json`), JSON.stringify(json, null, 1) + "\n");
  console.log(
    `${fam}-${name}: ${fs.statSync(file).size} bytes, types ${JSON.stringify(types)}, rel ${json.llama_cpp_vs_reference.rel_max}, argmax ${agree}/${prompt.length}, greedy ${qg.filter((x, i) => x === rg[i]).length}/16`,
  );
}
fs.rmSync(tmp, { recursive: true });
