// The notes of an ELF64 little-endian file (an AMDGPU code object), read from its PT_NOTE program headers or,
// for relocatable objects without program headers, its SHT_NOTE sections.

import { RocmError } from "./errors.js";

/** One ELF note: owner name, type and descriptor bytes. */
export interface ElfNote {
  /** Owner, e.g. `AMDGPU` (without the terminating NUL). */
  readonly name: string;
  /** Note type, e.g. 32 (NT_AMDGPU_METADATA). */
  readonly type: number;
  /** Descriptor bytes (a view into the file). */
  readonly desc: Uint8Array;
}

/** ELF machine number of AMDGPU (EM_AMDGPU). */
export const EM_AMDGPU = 224;

const bad = (what: string): RocmError => new RocmError("bad_code_object", `code object: ${what}`);

/** Every note of an ELF64 LE file; throws `bad_code_object` naming what is wrong when it is not one. */
export function readElfNotes(bytes: Uint8Array): ElfNote[] {
  if (bytes.length < 64 || bytes[0] !== 0x7f || bytes[1] !== 0x45 || bytes[2] !== 0x4c || bytes[3] !== 0x46)
    throw bad("not an ELF file");
  if (bytes[4] !== 2 || bytes[5] !== 1) throw bad("not a 64-bit little-endian ELF file");
  const v = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const machine = v.getUint16(18, true);
  if (machine !== EM_AMDGPU) throw bad(`ELF machine ${machine} is not AMDGPU (${EM_AMDGPU})`);
  const num = (o: number): number => Number(v.getBigUint64(o, true));
  const ranges: [number, number][] = [];
  // Program headers (a linked code object): PT_NOTE = 4.
  const phoff = num(32),
    phentsize = v.getUint16(54, true),
    phnum = v.getUint16(56, true);
  for (let i = 0; i < phnum; i++) {
    const h = phoff + i * phentsize;
    if (h + 56 > bytes.length) throw bad(`program header ${i} lies past the end of the file`);
    if (v.getUint32(h, true) === 4) ranges.push([num(h + 8), num(h + 32)]);
  }
  // Section headers when no segment holds notes (a relocatable object): SHT_NOTE = 7.
  if (ranges.length === 0) {
    const shoff = num(40),
      shentsize = v.getUint16(58, true),
      shnum = v.getUint16(60, true);
    for (let i = 0; i < shnum; i++) {
      const h = shoff + i * shentsize;
      if (h + 64 > bytes.length) throw bad(`section header ${i} lies past the end of the file`);
      if (v.getUint32(h + 4, true) === 7) ranges.push([num(h + 24), num(h + 32)]);
    }
  }
  const notes: ElfNote[] = [];
  for (const [off, size] of ranges) {
    if (off + size > bytes.length) throw bad(`note segment at ${off} (${size} bytes) lies past the end of the file`);
    // Notes in AMDGPU code objects are 4-byte aligned: name and descriptor each padded to 4 bytes.
    let p = off;
    while (p + 12 <= off + size) {
      const namesz = v.getUint32(p, true),
        descsz = v.getUint32(p + 4, true),
        type = v.getUint32(p + 8, true);
      const nameAt = p + 12,
        descAt = nameAt + align4(namesz),
        next = descAt + align4(descsz);
      if (next > off + size) throw bad(`note at ${p} overruns its segment`);
      const name = new TextDecoder().decode(bytes.subarray(nameAt, nameAt + Math.max(0, namesz - 1)));
      notes.push({ name, type, desc: bytes.subarray(descAt, descAt + descsz) });
      p = next;
    }
  }
  return notes;
}

const align4 = (n: number): number => (n + 3) & ~3;
