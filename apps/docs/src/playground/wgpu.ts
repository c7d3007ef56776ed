// The playground's WebGPU path: the demo model's decode graph staged once on the WgpuExecutor of a page (its reads are
// awaited: no blocking waits on a page), fed the prompt one token at a time into its KV
// state, then greedy decoding (argmax) until EOS or the limit. The runtime's Engine is synchronous, so this loop is
// the page's own; it decodes the same way (`skipSpecial` stream decoding, EOS ids not emitted).

import type { openWgpu } from "@poot/backend-wgpu";
import { createWgpuExecutor } from "@poot/backend-wgpu/executor";
import { checkpointConsts } from "@poot/models";
import type { DemoModel } from "./model.js";
import type { WorkerEvent } from "./protocol.js";

type Done = Extract<WorkerEvent, { kind: "done" }>;

function argmax(a: ArrayLike<number>): number {
  let b = 0;
  for (let i = 1; i < a.length; i++) if (a[i]! > a[b]!) b = i;
  return b;
}

/** Greedy generation on WebGPU; `onText` receives the text as it is decoded. */
export async function generateWgpu(
  ctx: Awaited<ReturnType<typeof openWgpu>>,
  demo: DemoModel,
  prompt: string,
  maxTokens: number,
  onText: (t: string) => void,
): Promise<Done> {
  const { model, tokenizer } = demo;
  const promptIds = tokenizer.encode(prompt, { addSpecial: true });
  const context = Math.min(model.config.maxPositions, promptIds.length + maxTokens);
  const executor = createWgpuExecutor(ctx);
  try {
    executor.bindWeights(checkpointConsts(model.checkpoint));
    const prog = executor.stage(model.graph({ kind: "decode", context, tokens: 1 }), { name: "decode" });
    const state = prog.createState();
    const step = async (id: number, pos: number): Promise<Float32Array> => {
      prog.writeSlot("ids", [id]);
      prog.writeSlot("pos", [pos]);
      prog.run(state);
      return (await prog.readOutputAsync("logits")) as Float32Array;
    };
    const t0 = performance.now();
    let logits: Float32Array = new Float32Array(0);
    for (let t = 0; t < promptIds.length; t++) logits = await step(promptIds[t]!, t);
    const prefillMs = performance.now() - t0;
    const stream = tokenizer.streamDecoder({ skipSpecial: true });
    const eos = new Set(model.config.eosTokenIds);
    const ids: number[] = [];
    let text = "",
      finish = "length",
      decodeMs = 0,
      steps = 0;
    for (;;) {
      const id = argmax(logits);
      if (eos.has(id)) {
        finish = "eos";
        break;
      }
      ids.push(id);
      const piece = stream.push(id);
      text += piece;
      if (piece !== "") onText(piece);
      if (ids.length >= maxTokens || promptIds.length + ids.length >= context) break;
      const t1 = performance.now();
      logits = await step(id, promptIds.length + ids.length - 1);
      decodeMs += performance.now() - t1;
      steps++;
    }
    const rest = stream.flush();
    if (rest !== "") onText(rest);
    text += rest;
    return {
      kind: "done",
      ids,
      text,
      promptIds,
      device: ctx.caps.adapter,
      finish,
      prefillTps: (promptIds.length / prefillMs) * 1000,
      decodeTps: steps > 0 ? (steps / decodeMs) * 1000 : 0,
    };
  } finally {
    executor.dispose();
  }
}
