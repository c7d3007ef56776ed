// Typed access to the engine's WebAssembly global: the ES lib typings of this project do not declare it.
// Only the members codegen and its tests use are described.

/** The subset of the WebAssembly JS API used here. */
export interface WasmApi {
  validate(bytes: Uint8Array): boolean;
  Module: new (bytes: Uint8Array) => object;
  Instance: new (
    module: object,
    imports: Record<string, Record<string, unknown>>,
  ) => { readonly exports: Record<string, unknown> };
  Memory: new (desc: {
    initial: number;
    maximum?: number;
    shared?: boolean;
  }) => { readonly buffer: ArrayBuffer | SharedArrayBuffer };
}

/** The engine's WebAssembly namespace. */
export const wasmApi: WasmApi = (globalThis as unknown as { WebAssembly: WasmApi }).WebAssembly;
