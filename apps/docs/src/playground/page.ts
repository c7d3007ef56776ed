// The playground page: a prompt box whose text the demo model continues in this browser. With a WebGPU adapter the
// page runs the model on backend-wgpu itself (wgpu.ts); without one (or with `?backend=cpu`) a worker runs it on
// the CPU backend (Wasm + Web Workers). State lands on `data-*` attributes of #playground for tests and screenshots.

import { WgpuError, openWgpu } from "@poot/backend-wgpu";
import { loadDemo, type DemoModel } from "./model.js";
import type { GenerateRequest, WorkerEvent } from "./protocol.js";
import { generateWgpu } from "./wgpu.js";

interface El {
  textContent: string | null;
  value: string;
  disabled: boolean;
  dataset: Record<string, string | undefined>;
  addEventListener(t: string, f: (e: { preventDefault(): void }) => void): void;
}
interface PageWorker {
  onmessage: ((e: { data: WorkerEvent }) => void) | null;
  onerror: ((e: { message: string }) => void) | null;
  postMessage(m: GenerateRequest): void;
}
const page = globalThis as unknown as {
  document: { getElementById(id: string): El | null };
  Worker: new (url: URL, options: { type: "module" }) => PageWorker;
  navigator: { gpu?: Parameters<typeof openWgpu>[0]; hardwareConcurrency?: number };
  location: { search: string };
  crossOriginIsolated: boolean;
};

const $ = (id: string): El => {
  const e = page.document.getElementById(id);
  if (e === null) throw new Error(`the playground page has no #${id}`);
  return e;
};

/** Whether this browser has a WebGPU adapter, and its name or why not. */
async function webgpu(): Promise<{ adapter: string | null; note: string }> {
  try {
    const ctx = await openWgpu(page.navigator.gpu);
    const name = ctx.caps.adapter;
    ctx.dispose();
    return { adapter: name, note: `WebGPU adapter: ${name}` };
  } catch (e) {
    if (e instanceof WgpuError)
      return { adapter: null, note: `no WebGPU here (${e.code}): the CPU backend runs the model` };
    throw e;
  }
}

function main(): void {
  const root = $("playground"),
    form = $("pg-form"),
    prompt = $("pg-prompt"),
    maxTokens = $("pg-max"),
    go = $("pg-go");
  const out = $("pg-out"),
    backend = $("pg-backend"),
    speed = $("pg-speed"),
    status = $("pg-status");
  if (!page.crossOriginIsolated) {
    status.textContent =
      "this page is not cross-origin isolated (COOP/COEP headers), so the CPU backend cannot share memory with its workers";
    root.dataset["state"] = "error";
    return;
  }
  const gpu = webgpu().then((w) => {
    root.dataset["webgpu"] = w.note;
    $("pg-webgpu").textContent = w.note;
    return new URLSearchParams(page.location.search).get("backend") === "cpu" ? null : w.adapter;
  });
  let demo: Promise<DemoModel> | undefined;
  const worker = new page.Worker(new URL("./worker.js", import.meta.url), { type: "module" });
  const threads = Math.max(1, Math.min(4, (page.navigator.hardwareConcurrency ?? 2) - 1));
  const onEvent = (m: WorkerEvent): void => {
    if (m.kind === "status") status.textContent = m.text;
    else if (m.kind === "text") out.textContent = (out.textContent ?? "") + m.text;
    else if (m.kind === "done") {
      backend.textContent = m.device;
      speed.textContent = `prefill ${m.prefillTps.toFixed(1)} tok/s, decode ${m.decodeTps.toFixed(1)} tok/s`;
      status.textContent = `done: ${m.ids.length} tokens (${m.finish})`;
      root.dataset["ids"] = JSON.stringify(m.ids);
      root.dataset["promptIds"] = JSON.stringify(m.promptIds);
      root.dataset["state"] = "done";
      go.disabled = false;
    } else {
      status.textContent = `error: ${m.name}${m.code === undefined ? "" : ` (${m.code})`}: ${m.message}`;
      root.dataset["state"] = "error";
      go.disabled = false;
    }
  };
  worker.onmessage = (e) => onEvent(e.data);
  worker.onerror = (e) => {
    status.textContent = `worker error: ${e.message}`;
    root.dataset["state"] = "error";
  };
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    go.disabled = true;
    out.textContent = "";
    speed.textContent = "";
    root.dataset["state"] = "running";
    const req: GenerateRequest = { prompt: prompt.value, maxTokens: Number(maxTokens.value) || 32, threads };
    void gpu.then(async (adapter) => {
      if (adapter === null) return worker.postMessage(req);
      // WebGPU: a fresh device per generation (the executor releases its device when disposed).
      try {
        status.textContent = "downloading the demo model (15 MB)…";
        demo ??= loadDemo(new URL("../demo/", import.meta.url));
        const d = await demo;
        status.textContent = "compiling kernels and generating on WebGPU…";
        const done = await generateWgpu(await openWgpu(page.navigator.gpu), d, req.prompt, req.maxTokens, (t) =>
          onEvent({ kind: "text", text: t }),
        );
        onEvent({ ...done, device: `wgpu (${done.device})` });
      } catch (e) {
        onEvent({
          kind: "error",
          name: (e as Error).name,
          code: (e as { code?: string }).code,
          message: (e as Error).message,
        });
      }
    });
  });
  void gpu.then(() => void (root.dataset["state"] = "ready"));
}

main();
