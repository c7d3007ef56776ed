// The browser page: loads a fixture model with backend-wgpu when the browser offers WebGPU; where it does not, says
// why and runs the same model on the CPU backend's Wasm kernels (a Worker, see cpu-worker.ts). `?backend=cpu` forces
// the CPU path. The result lands in `window.result` for the test, which compares it with the fixture's reference.

import { createCpuExecutor } from "@poot/backend-cpu/browser";
import { WgpuError, openWgpu } from "@poot/backend-wgpu";
import { createWgpuExecutor } from "@poot/backend-wgpu/executor";
import { checkpointConsts } from "@poot/models";
import { argmax, loadFixture, type PageRun } from "./fixture.js";

type Failure = { name: string; code?: string; message: string; stack?: string };
type Outcome = { ok: PageRun } | { error: Failure };

// The browser globals the page uses (the package's TypeScript lib is ES only).
interface PageWorker {
  onmessage: ((e: { data: Outcome }) => void) | null;
  onerror: ((e: { message: string }) => void) | null;
  postMessage(m: unknown): void;
  terminate(): void;
}
const page = globalThis as unknown as {
  Worker: new (url: string, options: { type: "module" }) => PageWorker;
  location: { search: string };
  navigator: { gpu?: Parameters<typeof openWgpu>[0] };
  crossOriginIsolated: boolean;
  result?: unknown;
};

const failure = (e: unknown): Failure => ({
  name: (e as Error).name,
  code: (e as { code?: string }).code,
  message: (e as Error).message,
  stack: (e as Error).stack,
});

/** Plain arrays for the test (page.evaluate returns JSON-like values). */
const plain = (o: Outcome): unknown =>
  "ok" in o
    ? { ok: { ...o.ok, rows: o.ok.rows.map((r) => ({ position: r.position, logits: Array.from(r.logits) })) } }
    : o;

/** The WebGPU path: one prefill over prompt + reference continuation; row r are the logits after token r. */
async function runWgpu(ctx: Awaited<ReturnType<typeof openWgpu>>): Promise<PageRun> {
  const fx = await loadFixture();
  const ids = [...fx.promptIds, ...fx.greedyIds.slice(0, -1)];
  const executor = createWgpuExecutor(ctx);
  executor.bindWeights(checkpointConsts(fx.model.checkpoint));
  const p = executor.stage(fx.model.graph({ kind: "prefill", tokens: ids.length }), { name: "prefill" });
  p.writeSlot("ids", ids);
  p.run();
  // A page may not block: WebGPU's read-back is awaited.
  const all = (await p.readOutputAsync("logits")) as Float32Array;
  const V = fx.model.config.vocabSize;
  const rows = ids.map((_, r) => ({ position: r, logits: all.slice(r * V, (r + 1) * V) }));
  return {
    backend: "wgpu",
    device: ctx.caps.adapter,
    rows,
    ids: rows.slice(fx.promptIds.length - 1).map((r) => argmax(r.logits)),
  };
}

function runCpu(threads: number): Promise<Outcome> {
  const w = new page.Worker("/cpu-worker.js", { type: "module" });
  return new Promise((resolve) => {
    w.onmessage = (e) => {
      resolve(e.data);
      w.terminate();
    };
    w.onerror = (e) => resolve({ error: { name: "WorkerError", message: e.message } });
    w.postMessage({ threads });
  });
}

async function main(): Promise<unknown> {
  const force = new URLSearchParams(page.location.search).get("backend");
  let webgpu: { available: boolean; code?: string; message?: string; adapter?: string };
  let ctx: Awaited<ReturnType<typeof openWgpu>> | undefined;
  try {
    ctx = await openWgpu(page.navigator.gpu);
    webgpu = { available: true, adapter: ctx.caps.adapter };
  } catch (e) {
    if (!(e instanceof WgpuError)) throw e;
    webgpu = { available: false, code: e.code, message: e.message };
  }
  const isolated = page.crossOriginIsolated;
  // The CPU executor refuses a page's main thread (it would block it): the error the page gets instead of a hang.
  const mainThread = await createCpuExecutor({ threads: 1 }).then(
    (e) => (e.dispose(), "accepted"),
    (e: unknown) => failure(e),
  );
  if (ctx !== undefined && force !== "cpu") {
    try {
      return { webgpu, isolated, mainThread, run: plain({ ok: await runWgpu(ctx) }) };
    } catch (e) {
      return { webgpu, isolated, mainThread, run: { error: failure(e) } };
    } finally {
      ctx.dispose();
    }
  }
  ctx?.dispose();
  return { webgpu, isolated, mainThread, run: plain(await runCpu(2)) };
}

main().then(
  (r) => void (page.result = r),
  (e: unknown) => void (page.result = { run: { error: failure(e) } }),
);
