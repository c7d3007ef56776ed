// The playground page: a prompt box whose text the demo model continues in this browser. Generation runs in a
// worker on the CPU backend (Wasm + Web Workers); the page also asks for a WebGPU adapter and says what it found.
// State lands on `data-*` attributes of #playground so tests and screenshots can wait on it.

import { WgpuError, openWgpu } from "@poot/backend-wgpu";
import type { GenerateRequest, WorkerEvent } from "./protocol.js";

interface El { textContent: string | null; value: string; disabled: boolean; dataset: Record<string, string | undefined>; addEventListener(t: string, f: (e: { preventDefault(): void }) => void): void }
interface PageWorker { onmessage: ((e: { data: WorkerEvent }) => void) | null; onerror: ((e: { message: string }) => void) | null; postMessage(m: GenerateRequest): void }
const page = globalThis as unknown as {
  document: { getElementById(id: string): El | null };
  Worker: new (url: URL, options: { type: "module" }) => PageWorker;
  navigator: { gpu?: Parameters<typeof openWgpu>[0]; hardwareConcurrency?: number };
  crossOriginIsolated: boolean;
};

const $ = (id: string): El => {
  const e = page.document.getElementById(id);
  if (e === null) throw new Error(`the playground page has no #${id}`);
  return e;
};

async function webgpu(): Promise<string> {
  try {
    const ctx = await openWgpu(page.navigator.gpu);
    const name = ctx.caps.adapter;
    ctx.dispose();
    return `WebGPU adapter: ${name} (generation runs on the CPU backend; see the page notes)`;
  } catch (e) {
    if (e instanceof WgpuError) return `no WebGPU here (${e.code}): the CPU backend runs the model`;
    throw e;
  }
}

function main(): void {
  const root = $("playground"), form = $("pg-form"), prompt = $("pg-prompt"), maxTokens = $("pg-max"), go = $("pg-go");
  const out = $("pg-out"), backend = $("pg-backend"), speed = $("pg-speed"), status = $("pg-status");
  if (!page.crossOriginIsolated) {
    status.textContent = "this page is not cross-origin isolated (COOP/COEP headers), so the CPU backend cannot share memory with its workers";
    root.dataset["state"] = "error";
    return;
  }
  void webgpu().then((t) => void (root.dataset["webgpu"] = t, $("pg-webgpu").textContent = t));
  const worker = new page.Worker(new URL("./worker.js", import.meta.url), { type: "module" });
  const threads = Math.max(1, Math.min(4, (page.navigator.hardwareConcurrency ?? 2) - 1));
  worker.onmessage = (e) => {
    const m = e.data;
    if (m.kind === "status") status.textContent = m.text;
    else if (m.kind === "text") out.textContent = (out.textContent ?? "") + m.text;
    else if (m.kind === "done") {
      backend.textContent = `cpu (${m.device})`;
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
    worker.postMessage({ prompt: prompt.value, maxTokens: Number(maxTokens.value) || 32, threads });
  });
  root.dataset["state"] = "ready";
}

main();
