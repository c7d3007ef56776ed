// The text worker's thread (built to dist/text-worker.js): loads the model's tokenizer once, then answers
// encode and chat requests from the server's main thread, so a long prompt is tokenized here and never
// holds the event loop that serves /health, streams tokens and accepts connections.
import { parentPort, workerData } from "node:worker_threads";
import { loadTokenizer } from "@poot/models";
import { encodeChat, textCodec } from "./text.js";
import type { TextRequest, TextWorkerData } from "./text-worker.js";

const data = workerData as TextWorkerData;
const codec = textCodec(loadTokenizer(data.model), data.chatTemplate);

parentPort!.on("message", (m: TextRequest) => {
  try {
    const ids =
      m.op === "encode" ? codec.tok.encode(m.text, { addSpecial: m.special }) : encodeChat(codec, m.messages, m.tools);
    // Ids travel as a transferred Int32Array: the main thread receives a buffer, not a 100k-element array to clone.
    const packed = ids === null ? null : Int32Array.from(ids);
    parentPort!.postMessage({ id: m.id, ids: packed }, packed === null ? [] : [packed.buffer]);
  } catch (err) {
    parentPort!.postMessage({ id: m.id, error: (err as Error).message });
  }
});
parentPort!.postMessage({ ready: true });
