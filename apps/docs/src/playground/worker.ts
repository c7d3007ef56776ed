// The playground's generation worker: the demo model on @poot/backend-cpu/browser (Wasm kernels in Web Workers over a
// shared memory, decision 0703) under the runtime's Engine, greedy decoding streamed back token by token. The
// executor blocks and compiles modules synchronously, which only a worker may do.

import { createCpuExecutor } from "@poot/backend-cpu/browser";
import { LoadedModel, Tokenizer, parseHFConfig, safetensorsFromBytes } from "@poot/models";
import { Engine, generate } from "@poot/runtime";
import type { GenerateRequest, WorkerEvent } from "./protocol.js";

interface WorkerScope {
  onmessage: ((e: { data: GenerateRequest }) => void) | null;
  postMessage(m: WorkerEvent): void;
}
const scope = globalThis as unknown as WorkerScope;
const post = (e: WorkerEvent): void => scope.postMessage(e);

async function get(name: string): Promise<Response> {
  const r = await fetch(new URL(`../demo/${name}`, import.meta.url));
  if (!r.ok) throw new Error(`GET demo/${name}: HTTP ${r.status}`);
  return r;
}

let loaded: Promise<{ model: LoadedModel; tokenizer: Tokenizer }> | undefined;
function load(): Promise<{ model: LoadedModel; tokenizer: Tokenizer }> {
  loaded ??= (async () => {
    post({ kind: "status", text: "downloading the demo model (15 MB)…" });
    const config = parseHFConfig(await (await get("config.json")).json(), "config.json");
    const bytes = new Uint8Array(await (await get("model.safetensors")).arrayBuffer());
    const tokenizer = new Tokenizer(await (await get("tokenizer.json")).json(), (await (await get("tokenizer_config.json")).json()) as Record<string, unknown>);
    return { model: LoadedModel.fromCheckpoint(config, safetensorsFromBytes(bytes, "model.safetensors")), tokenizer };
  })();
  return loaded;
}

async function run(req: GenerateRequest): Promise<void> {
  const { model, tokenizer } = await load();
  post({ kind: "status", text: "compiling kernels…" });
  const executor = await createCpuExecutor({ threads: req.threads });
  // A plain prompt gets the tokenizer's post-processor specials (BOS), as `poot run` does.
  const promptIds = tokenizer.encode(req.prompt, { addSpecial: true });
  const context = Math.min(model.config.maxPositions, promptIds.length + req.maxTokens);
  const engine = new Engine(model, { executor, context, tokenizer, maxSequences: 1 });
  try {
    post({ kind: "status", text: "generating…" });
    // Greedy ignores the seed; giving one keeps the runtime off node:crypto, which a browser lacks.
    const it = generate(engine, engine.openSession(), promptIds, { maxTokens: req.maxTokens, temperature: 0, seed: 0 });
    for (;;) {
      const r = it.next();
      if (r.done === true) {
        const v = r.value;
        post({ kind: "done", ids: [...v.ids], text: v.text, promptIds, device: executor.caps.device, finish: v.finishReason ?? "", prefillTps: (v.promptTokens / v.prefillMs) * 1000, decodeTps: v.decodeSteps > 0 ? (v.decodeSteps / v.decodeMs) * 1000 : 0 });
        return;
      }
      if (r.value.text !== "") post({ kind: "text", text: r.value.text });
    }
  } finally {
    engine.close();
    executor.dispose();
  }
}

scope.onmessage = (e) => {
  run(e.data).catch((err: Error) => post({ kind: "error", name: err.name, code: (err as { code?: string }).code, message: err.message }));
};
