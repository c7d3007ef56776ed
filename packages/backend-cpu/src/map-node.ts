// Weights mapped from their file into the shared memory (Linux): the whole pages of a tensor are replaced by a private
// mapping of the file's pages (MAP_PRIVATE, populated up front), the partial pages at its ends are read. A start then
// neither copies the weights nor faults in fresh zeroed pages: the page cache's pages are the weights (decision 1620).

import { readSync } from "node:fs";
import { createRequire } from "node:module";
import type { FileMapper } from "./transport.js";

const PROT_READ = 0x1;
const PROT_READ_WRITE = 0x3;
const MAP_PRIVATE = 0x2;
const MAP_POPULATE = 0x8000;
const MREMAP_MAYMOVE_FIXED = 0x3;
const PAGE = 4096;
/** x86-64's and arm64's (4 KiB pages) PMD size: the huge pages of the page cache's large folios. */
const HUGE = 2 << 20;

type Fn = (...a: unknown[]) => unknown;
interface Libc {
  readonly address: (view: Uint8Array) => number | bigint;
  readonly mmap: Fn;
  readonly mremap: Fn;
  readonly munmap: Fn;
  readonly mprotect: Fn;
}

let libc: Libc | null | undefined;

function loadLibc(): Libc | null {
  if (libc !== undefined) return libc;
  libc = null;
  if (process.platform !== "linux" || !["x64", "arm64"].includes(process.arch)) return libc;
  try {
    const koffi = createRequire(import.meta.url)("koffi") as { load(p: string): { func(s: string): Fn } };
    const lib = koffi.load("libc.so.6");
    // memmove(p, p, 0) returns p: the address of a typed array's first byte.
    const memmove = lib.func("uintptr_t memmove(void *dst, const void *src, size_t n)");
    libc = {
      address: (view) => memmove(view, view, 0) as number | bigint,
      mmap: lib.func("intptr_t mmap(uintptr_t addr, size_t len, int prot, int flags, int fd, int64_t off)"),
      mremap: lib.func("intptr_t mremap(intptr_t old, size_t len, size_t newLen, int flags, uintptr_t to)"),
      munmap: lib.func("int munmap(intptr_t addr, size_t len)"),
      mprotect: lib.func("int mprotect(intptr_t addr, size_t len, int prot)"),
    };
  } catch {
    libc = null;
  }
  return libc;
}

function readAll(fd: number, dst: Uint8Array, offset: number): void {
  for (let done = 0; done < dst.byteLength; ) {
    const n = readSync(fd, dst, done, dst.byteLength - done, offset + done);
    if (n === 0) throw new Error(`file ended at byte ${offset + done}`);
    done += n;
  }
}

/**
 * Maps `view` (a weight's bytes in the shared memory) from the file: its whole pages by a private mapping moved over
 * them (the memory is never left unmapped: the new mapping is made elsewhere first), its ends by reads. False, with
 * nothing changed, where the view and the file offset are not congruent modulo the page or the mapping fails.
 */
function mapInto(view: Uint8Array, fd: number, offset: number): boolean {
  const c = loadLibc();
  if (c === null) return false;
  const at = Number(c.address(view));
  if ((at - offset) % PAGE !== 0) return false;
  const lo = Math.ceil(at / PAGE) * PAGE;
  const hi = Math.floor((at + view.byteLength) / PAGE) * PAGE;
  if (hi <= lo) return false;
  const len = hi - lo;
  // Populated read-only, so the page cache's pages are mapped rather than copied (a writable private mapping would be
  // populated by copy-on-write faults); then writable, as the rest of the memory is: a write copies its page.
  const tmp = Number(c.mmap(0, len, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, offset + (lo - at)));
  if (tmp === -1) return false;
  if (c.mprotect(tmp, len, PROT_READ_WRITE) !== 0 || Number(c.mremap(tmp, len, len, MREMAP_MAYMOVE_FIXED, lo)) === -1) {
    c.munmap(tmp, len);
    return false;
  }
  readAll(fd, view.subarray(0, lo - at), offset);
  readAll(fd, view.subarray(hi - at), offset + (hi - at));
  return true;
}

/** The node platform's file mapper: Linux through koffi's libc; null elsewhere or where libc does not load. */
export function nodeFileMapper(): FileMapper | null {
  const c = loadLibc();
  return c === null ? null : { page: PAGE, huge: HUGE, map: mapInto, address: (view) => Number(c.address(view)) };
}
