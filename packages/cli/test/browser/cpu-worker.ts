// The page's CPU path, in a dedicated Worker (the executor blocks and compiles modules synchronously, which a page's
// main thread may not): @poot/backend-cpu/browser (Web Workers over a shared memory) under the runtime's Engine,
// prefill then one-token decode fed the reference continuation, as packages/serve/test/cpu-fixtures.test.ts does.

import { createCpuExecutor } from "@poot/backend-cpu/browser";
import { Engine } from "@poot/runtime";
import { argmax, loadFixture, type PageRun } from "./fixture.js";

interface WorkerScope {
  onmessage: ((e: { data: { threads: number } }) => void) | null;
  postMessage(m: unknown, transfer?: unknown[]): void;
}
const scope = globalThis as unknown as WorkerScope;

async function run(threads: number): Promise<PageRun> {
  const fx = await loadFixture();
  const executor = await createCpuExecutor({ threads });
  const engine = new Engine(fx.model, { executor, context: 64, tokenizer: null });
  try {
    const T = fx.promptIds.length,
      rows: PageRun["rows"][number][] = [];
    const pre = engine.openSession();
    rows.push({ position: T - 1, logits: pre.step(fx.promptIds) });
    pre.release();
    const s = engine.openSession();
    let logits: Float32Array = new Float32Array(0);
    for (let t = 0; t < T; t++) rows.push({ position: t, logits: (logits = s.step([fx.promptIds[t]!])) });
    const ids: number[] = [];
    for (let g = 0; g < fx.greedyIds.length; g++) {
      ids.push(argmax(logits));
      if (g + 1 === fx.greedyIds.length) break;
      rows.push({ position: T + g, logits: (logits = s.step([fx.greedyIds[g]!])) });
    }
    s.release();
    return { backend: "cpu", device: executor.caps.device, rows, ids };
  } finally {
    engine.close();
    executor.dispose();
  }
}

scope.onmessage = (e) => {
  run(e.data.threads).then(
    (r) =>
      scope.postMessage(
        { ok: r },
        r.rows.map((x) => x.logits.buffer),
      ),
    (err: Error) =>
      scope.postMessage({
        error: { name: err.name, code: (err as { code?: string }).code, message: err.message, stack: err.stack },
      }),
  );
};
