// Fixture logits figures per backend (for before/after comparisons of executor changes): each fixtures/hf
// family through the runtime's Engine, the largest relative error (max |a - ref| / max |ref|) against transformers'
// float64 logits over the prefill row and every decode position, and whether the greedy ids match.
// usage: node packages/cli/bench/fixture-logits.mjs BACKEND... (eval, cpu, vulkan, wgpu, interp); needs `pnpm build`.
import * as fs from "node:fs";
import * as path from "node:path";
import { LoadedModel, openSafetensors } from "@poot/models";
import { Engine, argmax } from "@poot/runtime";
import { createCpuExecutor } from "@poot/backend-cpu";
import { createVulkanExecutor } from "@poot/backend-vulkan";
import { createSyncWgpuExecutor } from "@poot/backend-wgpu/node";
import { createEvalExecutor, createInterpExecutor } from "@poot/backend-reference";
import { fixture } from "@poot/testkit";

const FIX = fixture("hf");
const make = {
  eval: () => createEvalExecutor(),
  interp: () => createInterpExecutor(),
  cpu: () => createCpuExecutor({}),
  vulkan: () => createVulkanExecutor({}),
  wgpu: () => createSyncWgpuExecutor({}),
};
const families = (process.env.FAMILIES ?? "llama3,qwen3,gemma3,olmoe,qwen35").split(",");

function relErr(a, ref) {
  let d = 0,
    m = 0;
  for (let i = 0; i < ref.length; i++) {
    d = Math.max(d, Math.abs(a[i] - ref[i]));
    m = Math.max(m, Math.abs(ref[i]));
  }
  return d / m;
}

for (const backend of process.argv.slice(2)) {
  for (const fam of families) {
    const dir = path.join(FIX, fam);
    const ref = JSON.parse(fs.readFileSync(path.join(dir, "reference.json"), "utf8"));
    const full = openSafetensors(path.join(dir, "reference.safetensors")).readF32Sync("full_logits");
    const executor = make[backend]();
    const engine = new Engine(LoadedModel.open(dir, { weights: "f32" }), { executor, context: 64, tokenizer: null });
    try {
      const V = engine.config.vocabSize,
        T = ref.prompt_ids.length;
      const row = (r) => full.subarray(r * V, (r + 1) * V);
      const pre = engine.openSession();
      const prefill = relErr(pre.step(ref.prompt_ids), row(T - 1));
      pre.release();
      const s = engine.openSession();
      let logits,
        decode = 0;
      for (let t = 0; t < T; t++) decode = Math.max(decode, relErr((logits = s.step([ref.prompt_ids[t]])), row(t)));
      const ids = [];
      for (let g = 0; g < ref.greedy_ids.length; g++) {
        ids.push(argmax(logits));
        if (g + 1 === ref.greedy_ids.length) break;
        decode = Math.max(decode, relErr((logits = s.step([ref.greedy_ids[g]])), row(T + g)));
      }
      console.log(
        JSON.stringify({
          backend,
          family: fam,
          prefill: Number(prefill.toExponential(4)),
          decode: Number(decode.toExponential(4)),
          greedy: JSON.stringify(ids) === JSON.stringify(ref.greedy_ids),
        }),
      );
    } finally {
      engine.close();
      executor.dispose();
    }
  }
}
