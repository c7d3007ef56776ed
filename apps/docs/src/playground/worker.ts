// The playground's generation worker: the demo model on @poot/backend-cpu/browser (Wasm kernels in Web Workers over a
// shared memory, decision 0703) under the runtime's Engine, greedy decoding streamed back token by token. The
// executor blocks and compiles modules synchronously, which only a worker may do.

import { createCpuExecutor } from "@poot/backend-cpu/browser";
import { Engine, generate } from "@poot/runtime";
import { loadDemo, type DemoModel } from "./model.js";
import type { GenerateRequest, WorkerEvent } from "./protocol.js";

interface WorkerScope {
  onmessage: ((e: { data: GenerateRequest }) => void) | null;
  postMessage(m: WorkerEvent): void;
}
const scope = globalThis as unknown as WorkerScope;
const post = (e: WorkerEvent): void => scope.postMessage(e);

let loaded: Promise<DemoModel> | undefined;
function load(): Promise<DemoModel> {
  post({ kind: "status", text: "downloading the demo model (15 MB)…" });
  loaded ??= loadDemo(new URL("../demo/", import.meta.url));
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
        post({
          kind: "done",
          ids: [...v.ids],
          text: v.text,
          promptIds,
          device: `cpu (${executor.caps.device})`,
          finish: v.finishReason ?? "",
          prefillTps: (v.promptTokens / v.prefillMs) * 1000,
          decodeTps: v.decodeSteps > 0 ? (v.decodeSteps / v.decodeMs) * 1000 : 0,
        });
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
  run(e.data).catch((err: Error) =>
    post({ kind: "error", name: err.name, code: (err as { code?: string }).code, message: err.message }),
  );
};
