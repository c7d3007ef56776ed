// Validates an emitted Wasm module with the engine's own `WebAssembly.validate` (V8 in Node).
// On rejection it compiles once more to recover V8's message, which `validate` does not expose.

import { wasmApi } from "../wasm/api.js";
import type { ValidationResult } from "./result.js";

/** Validates a Wasm binary; invalid modules carry V8's CompileError message. */
export function validateWasm(binary: Uint8Array): ValidationResult {
  const tool = "WebAssembly.validate";
  if (wasmApi.validate(binary)) return { status: "ok", tool };
  try {
    new wasmApi.Module(binary);
    return { status: "invalid", tool, message: "rejected by WebAssembly.validate" };
  } catch (e) {
    return { status: "invalid", tool, message: e instanceof Error ? e.message : String(e) };
  }
}
