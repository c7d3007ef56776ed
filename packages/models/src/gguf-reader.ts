// Sequential little-endian reader over a ByteSource, buffered in windows, for GGUF headers.
// Every length is checked against the bytes left in the file before anything is allocated.
import { CheckpointFormatError } from "./errors.js";
import type { ByteSource } from "./source.js";

const WINDOW = 1 << 20;
/** Strings up to this many bytes are decoded in place when they are ASCII. */
const SHORT = 24;

/** Cursor over a byte source; all reads are bounds-checked and fail with typed `truncated` errors. */
export class HeaderReader {
  /** Absolute position of the next byte to read. */
  pos = 0;
  private win: Uint8Array = new Uint8Array(0);
  private winStart = 0;
  private view = new DataView(this.win.buffer);
  // A string's bytes are its text: a leading U+FEFF is kept (a token may be one), not taken for a byte order mark.
  private readonly utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

  /** @param src the file. */
  constructor(readonly src: ByteSource) {}

  /** Bytes left after the cursor. */
  remaining(): number {
    return this.src.size - this.pos;
  }

  /** Throws `truncated` unless `n` more bytes exist. */
  need(n: number, what: string): void {
    if (n > this.remaining()) {
      throw new CheckpointFormatError("truncated", `${what} needs ${n} bytes but ${this.remaining()} remain`, {
        file: this.src.label,
        offset: this.pos,
      });
    }
  }

  /** Makes `[pos, pos+n)` available in the window and returns its offset inside the window. */
  private ensure(n: number, what: string): number {
    this.need(n, what);
    if (this.pos < this.winStart || this.pos + n > this.winStart + this.win.byteLength) {
      const len = Math.min(Math.max(n, WINDOW), this.src.size - this.pos);
      this.win = this.src.readSync(this.pos, len);
      this.winStart = this.pos;
      this.view = new DataView(this.win.buffer, this.win.byteOffset, this.win.byteLength);
    }
    const at = this.pos - this.winStart;
    this.pos += n;
    return at;
  }

  /** Reads a u8. */
  u8(what = "u8"): number {
    const at = this.ensure(1, what);
    return this.win[at]!;
  }
  /** Reads an i8. */
  i8(what = "i8"): number {
    const at = this.ensure(1, what);
    return this.view.getInt8(at);
  }
  /** Reads a little-endian u16. */
  u16(what = "u16"): number {
    const at = this.ensure(2, what);
    return this.view.getUint16(at, true);
  }
  /** Reads a little-endian i16. */
  i16(what = "i16"): number {
    const at = this.ensure(2, what);
    return this.view.getInt16(at, true);
  }
  /** Reads a little-endian u32. */
  u32(what = "u32"): number {
    const at = this.ensure(4, what);
    return this.view.getUint32(at, true);
  }
  /** Reads a little-endian i32. */
  i32(what = "i32"): number {
    const at = this.ensure(4, what);
    return this.view.getInt32(at, true);
  }
  /** Reads a little-endian f32. */
  f32(what = "f32"): number {
    const at = this.ensure(4, what);
    return this.view.getFloat32(at, true);
  }
  /** Reads a little-endian f64. */
  f64(what = "f64"): number {
    const at = this.ensure(8, what);
    return this.view.getFloat64(at, true);
  }
  /** Reads a little-endian u64 as bigint. */
  u64Big(what = "u64"): bigint {
    const at = this.ensure(8, what);
    return this.view.getBigUint64(at, true);
  }
  /** Reads a little-endian i64 as bigint. */
  i64Big(what = "i64"): bigint {
    const at = this.ensure(8, what);
    return this.view.getBigInt64(at, true);
  }
  /** A u64 that must fit a safe integer (counts, lengths, offsets). */
  u64(what: string, suffix = ""): number {
    if (this.remaining() < 8) this.need(8, what + suffix);
    const at = this.ensure(8, what);
    // Two u32 halves rather than a bigint: a header reads one per string (400k for a 128k-token vocabulary).
    const lo = this.view.getUint32(at, true);
    const hi = this.view.getUint32(at + 4, true);
    if (hi > 0x1fffff) {
      const v = this.view.getBigUint64(at, true);
      throw new CheckpointFormatError("bad-header", `${what}${suffix} ${v} is too large`, {
        file: this.src.label,
        offset: this.pos - 8,
      });
    }
    return hi * 0x1_0000_0000 + lo;
  }
  /**
   * `count` GGUF strings in a row (a vocabulary's tokens, its merges): the same strings and errors as `count` calls
   * of {@link HeaderReader.string}, but each run of strings that lies in the window is decoded by one TextDecoder call
   * and sliced, instead of a decoder call (or a character loop) per string (decision 1680).
   */
  strings(count: number, what: string): string[] {
    const out: string[] = new Array(count);
    const units: number[] = [];
    let i = 0;
    while (i < count) {
      if (this.pos < this.winStart || this.pos >= this.winStart + this.win.byteLength) {
        out[i++] = this.string(what);
        continue;
      }
      const win = this.win;
      const start = this.pos - this.winStart;
      const first = i;
      units.length = 0;
      const p = scanRun(win, start, count - i, units);
      i += units.length;
      if (i === first) {
        out[i++] = this.string(what);
        continue;
      }
      let text: string;
      try {
        text = this.utf8.decode(win.subarray(start + 8, p));
      } catch {
        // Some string of the run is not UTF-8: read them one by one, which names the first bad one.
        for (i = first; i < count; i++) out[i] = this.string(what);
        return out;
      }
      sliceRun(text, units, out, first);
      this.pos = this.winStart + p;
    }
    return out;
  }

  /** A GGUF string: u64 byte length then UTF-8 bytes. */
  string(what = "string"): string {
    const at = this.pos;
    const len = this.u64(what, " length");
    this.need(len, what);
    const off = this.ensure(len, what);
    const win = this.win;
    // Short ASCII strings (most of a vocabulary's 128k tokens) without a TextDecoder call each: the same string.
    if (len <= SHORT) {
      let ascii = "";
      let i = off;
      for (; i < off + len; i++) {
        const b = win[i]!;
        if (b >= 0x80) break;
        ascii += String.fromCharCode(b);
      }
      if (i === off + len) return ascii;
    }
    try {
      return this.utf8.decode(win.subarray(off, off + len));
    } catch {
      throw new CheckpointFormatError("bad-header", `${what} is not valid UTF-8`, { file: this.src.label, offset: at });
    }
  }
}

/**
 * The strings of a run from `win[start]` (a length's first byte), at most `max` of them: each one's UTF-16 length goes
 * to `units`; returns where the run ends. A run holds strings whose 8-byte length has every byte below 0x80 (so it
 * decodes to 8 ASCII units) and that end inside `win`. A loop of its own: V8 optimizes it (on-stack) apart from the
 * decode and the slices, where one function for all three deoptimized at each part's first use (decision 1680).
 */
function scanRun(win: Uint8Array, start: number, max: number, units: number[]): number {
  let p = start;
  while (units.length < max && p + 8 <= win.byteLength) {
    const lo = win[p]! | (win[p + 1]! << 8) | (win[p + 2]! << 16) | (win[p + 3]! << 24);
    const hi = win[p + 4]! | win[p + 5]! | win[p + 6]! | win[p + 7]!;
    if ((lo & 0x80808080) !== 0 || hi !== 0) break;
    const end = p + 8 + lo;
    if (end > win.byteLength) break;
    // UTF-16 units of valid UTF-8 (the run's fatal decode checks validity): one per sequence, two for a 4-byte one;
    // i.e. the bytes, less continuation bytes, plus 4-byte lead bytes.
    let u = lo;
    for (let j = p + 8; j < end; j++) {
      const b = win[j]!;
      if (b >= 0x80) {
        if (b < 0xc0) u--;
        else if (b >= 0xf0) u++;
      }
    }
    units.push(u);
    p = end;
  }
  return p;
}

/** The run's strings as slices of its decoded `text` (each after its 8 length units), into `out` from `first`. */
function sliceRun(text: string, units: readonly number[], out: string[], first: number): void {
  let at = 0;
  for (let k = 0; k < units.length; k++) {
    out[first + k] = text.slice(at, at + units[k]!);
    at += units[k]! + 8;
  }
}
