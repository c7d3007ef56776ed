// A WebAssembly module encoder: type, import, function, export and code sections over one imported memory.
// Function bodies come from `WasmCode`; this module only lays out sections in binary order.

import { ByteWriter } from "./bytes.js";
import type { WasmCode } from "./code.js";

/** Wasm value types (binary encodings). */
export const ValType = { i32: 0x7f, i64: 0x7e, f32: 0x7d, f64: 0x7c, v128: 0x7b } as const;
/** A value type byte. */
export type ValType = (typeof ValType)[keyof typeof ValType];

/** The imported linear memory. `shared` needs `maximum` (threads proposal). */
export interface MemoryImport {
  /** Import module name. */
  readonly module: string;
  /** Import field name. */
  readonly name: string;
  /** Minimum size in 64 KiB pages. */
  readonly minimum: number;
  /** Maximum size in pages (required when shared). */
  readonly maximum?: number;
  /** Whether the memory is shared between agents (worker threads). */
  readonly shared: boolean;
}

interface FuncImport {
  readonly module: string;
  readonly name: string;
  readonly type: number;
}

interface FuncDef {
  readonly type: number;
  readonly code: WasmCode;
}

/** Section ids of the binary format. */
const Section = { type: 1, import: 2, function: 3, export: 7, code: 10 } as const;

/**
 * Builds a module. Imported functions take the lowest function indices, as the binary format
 * numbers imports before definitions, so all imports must be added before any function.
 */
export class WasmModule {
  private readonly types: { params: readonly ValType[]; results: readonly ValType[] }[] = [];
  private readonly funcImports: FuncImport[] = [];
  private memory: MemoryImport | undefined;
  private readonly funcs: FuncDef[] = [];
  private readonly exports: { name: string; kind: number; index: number }[] = [];

  /** Interns a function type, returning its index. */
  type(params: readonly ValType[], results: readonly ValType[]): number {
    const key = `${params.join(",")}>${results.join(",")}`;
    const i = this.types.findIndex((t) => `${t.params.join(",")}>${t.results.join(",")}` === key);
    if (i >= 0) return i;
    this.types.push({ params, results });
    return this.types.length - 1;
  }

  /** Imports the module's memory. */
  importMemory(mem: MemoryImport): void {
    this.memory = mem;
  }

  /** Imports a function; returns its function index. Must precede {@link func}. */
  importFunc(module: string, name: string, params: readonly ValType[], results: readonly ValType[]): number {
    if (this.funcs.length > 0) throw new Error("codegen invariant violated: wasm import after a defined function");
    this.funcImports.push({ module, name, type: this.type(params, results) });
    return this.funcImports.length - 1;
  }

  /** Index the next defined function will get. */
  get nextFuncIndex(): number {
    return this.funcImports.length + this.funcs.length;
  }

  /** Defines a function; returns its function index. */
  func(params: readonly ValType[], results: readonly ValType[], code: WasmCode): number {
    this.funcs.push({ type: this.type(params, results), code });
    return this.funcImports.length + this.funcs.length - 1;
  }

  /** Exports a function by index. */
  exportFunc(name: string, index: number): void {
    this.exports.push({ name, kind: 0x00, index });
  }

  /** The binary module. */
  encode(): Uint8Array {
    const out = new ByteWriter().bytes([0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00]);
    const section = (id: number, fill: (w: ByteWriter) => void): void => {
      const body = new ByteWriter();
      fill(body);
      const b = body.finish();
      out.byte(id).u32(b.length).bytes(b);
    };
    section(Section.type, (w) => {
      w.u32(this.types.length);
      for (const t of this.types) {
        w.byte(0x60).u32(t.params.length).bytes(t.params).u32(t.results.length).bytes(t.results);
      }
    });
    const nImports = this.funcImports.length + (this.memory ? 1 : 0);
    if (nImports > 0) {
      section(Section.import, (w) => {
        w.u32(nImports);
        for (const f of this.funcImports) w.name(f.module).name(f.name).byte(0x00).u32(f.type);
        const m = this.memory;
        if (m) {
          w.name(m.module).name(m.name).byte(0x02);
          // Limits flags: 0 = min, 1 = min+max, 3 = min+max+shared.
          if (m.shared)
            w.byte(0x03)
              .u32(m.minimum)
              .u32(m.maximum ?? m.minimum);
          else if (m.maximum !== undefined) w.byte(0x01).u32(m.minimum).u32(m.maximum);
          else w.byte(0x00).u32(m.minimum);
        }
      });
    }
    section(Section.function, (w) => {
      w.u32(this.funcs.length);
      for (const f of this.funcs) w.u32(f.type);
    });
    section(Section.export, (w) => {
      w.u32(this.exports.length);
      for (const e of this.exports) w.name(e.name).byte(e.kind).u32(e.index);
    });
    section(Section.code, (w) => {
      w.u32(this.funcs.length);
      for (const f of this.funcs) {
        const body = f.code.encodeBody();
        w.u32(body.length).bytes(body);
      }
    });
    return out.finish();
  }
}
