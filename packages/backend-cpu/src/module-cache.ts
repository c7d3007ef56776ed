// One compiled WebAssembly module per distinct kernel code (decision 1670). A lowered program names each kernel after
// its plan entry (`prefill_4_p112_fusedrow`), so the same code of 16 layers arrives as 16 binaries that differ only
// in the export's name (and the name section): compiled as 16 modules, V8 decoded, Liftoff-compiled and tiered up to
// TurboFan each of them (146 TurboFan compiles in a warm `poot run` of the 1B model, 24 distinct codes). Kernels
// whose binaries agree outside their entry's export name and the custom sections share one module here, and run
// through the first such kernel's export.

import { WA } from "./memory.js";

/** A compiled module and the export a kernel runs through. */
export interface SharedModule {
  readonly module: object;
  readonly entry: string;
}

function leb(b: Uint8Array, at: { p: number }): number {
  let r = 0,
    s = 0,
    x: number;
  do {
    if (at.p >= b.length || s > 28) throw new Error("truncated");
    x = b[at.p++]!;
    r += (x & 0x7f) * 2 ** s;
    s += 7;
  } while (x & 0x80);
  return r;
}

/**
 * The bytes two kernels must share to run the same code: every section but the custom ones (id 0: names, debug
 * info), with the export named `entry` (a kernel's own entry point) written as a marker instead of its name. Null when
 * the binary does not parse as sections or exports no `entry` (such a binary gets a module of its own).
 */
export function canonicalKernel(binary: Uint8Array, entry: string): Uint8Array | null {
  try {
    if (binary.length < 8) return null;
    const name = new TextEncoder().encode(entry);
    const out: number[] = [];
    const push = (b: Uint8Array, from: number, to: number) => {
      for (let i = from; i < to; i++) out.push(b[i]!);
    };
    const u32 = (n: number) => out.push(n & 0xff, (n >>> 8) & 0xff, (n >>> 16) & 0xff, n >>> 24);
    push(binary, 0, 8);
    const at = { p: 8 };
    let found = false;
    while (at.p < binary.length) {
      const id = binary[at.p++]!;
      const size = leb(binary, at);
      const end = at.p + size;
      if (end > binary.length) return null;
      if (id === 7) {
        out.push(7);
        const n = leb(binary, at);
        u32(n);
        for (let i = 0; i < n; i++) {
          const len = leb(binary, at);
          if (len === name.length && name.every((c, j) => binary[at.p + j] === c)) {
            found = true;
            out.push(0xff);
          } else {
            out.push(0);
            u32(len);
            push(binary, at.p, at.p + len);
          }
          at.p += len;
          const kind = binary[at.p++]!;
          out.push(kind);
          u32(leb(binary, at));
        }
        if (at.p !== end) return null;
      } else if (id !== 0) {
        out.push(id);
        u32(size);
        push(binary, at.p, end);
      }
      at.p = end;
    }
    return found ? Uint8Array.from(out) : null;
  } catch {
    return null;
  }
}

/** FNV-1a over the bytes (the map's bucket; entries are compared byte for byte). */
function fnv(b: Uint8Array): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < b.length; i++) h = Math.imul(h ^ b[i]!, 0x01000193);
  return h >>> 0;
}

function equal(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** Compiled kernel modules of one device, shared by kernels of the same code (see the file's comment). */
export class ModuleCache {
  readonly #buckets = new Map<number, { readonly key: Uint8Array; readonly shared: SharedModule }[]>();
  #compiled = 0;
  #shared = 0;

  /** The module `binary` runs in and the export to call for `entry`: a cached one where the code is the same. */
  get(binary: Uint8Array, entry: string): SharedModule {
    const key = canonicalKernel(binary, entry);
    if (key === null) {
      this.#compiled++;
      return { module: new WA.Module(binary), entry };
    }
    const h = fnv(key);
    const bucket = this.#buckets.get(h) ?? [];
    const hit = bucket.find((e) => equal(e.key, key));
    if (hit !== undefined) {
      this.#shared++;
      return hit.shared;
    }
    const shared = { module: new WA.Module(binary), entry };
    bucket.push({ key, shared });
    this.#buckets.set(h, bucket);
    this.#compiled++;
    return shared;
  }

  /** Modules compiled and kernels that reused one, so far. */
  get counts(): { readonly compiled: number; readonly shared: number } {
    return { compiled: this.#compiled, shared: this.#shared };
  }
}
