// A growable byte buffer with the WebAssembly binary encodings: LEB128 integers, f32, names, vectors.
// Shared by the module encoder and the code-body emitter.

/** An append-only byte buffer with Wasm's primitive encodings. */
export class ByteWriter {
  private buf = new Uint8Array(256);
  private len = 0;

  /** Number of bytes written. */
  get length(): number {
    return this.len;
  }

  private reserve(n: number): void {
    if (this.len + n <= this.buf.length) return;
    const next = new Uint8Array(Math.max(this.buf.length * 2, this.len + n));
    next.set(this.buf.subarray(0, this.len));
    this.buf = next;
  }

  /** Appends one byte. */
  byte(b: number): this {
    this.reserve(1);
    this.buf[this.len++] = b & 0xff;
    return this;
  }

  /** Appends raw bytes. */
  bytes(bs: ArrayLike<number>): this {
    this.reserve(bs.length);
    for (let i = 0; i < bs.length; i++) this.buf[this.len++] = bs[i]! & 0xff;
    return this;
  }

  /** Unsigned LEB128 of a non-negative integer below 2^32. */
  u32(v: number): this {
    let x = v >>> 0;
    do {
      let b = x & 0x7f;
      x >>>= 7;
      if (x !== 0) b |= 0x80;
      this.byte(b);
    } while (x !== 0);
    return this;
  }

  /** Signed LEB128 of a 32-bit integer (i32.const immediates). */
  s32(v: number): this {
    let x = v | 0;
    for (;;) {
      const b = x & 0x7f;
      x >>= 7;
      // Done when the remaining bits are pure sign extension of bit 6 of this byte.
      if ((x === 0 && (b & 0x40) === 0) || (x === -1 && (b & 0x40) !== 0)) {
        this.byte(b);
        return this;
      }
      this.byte(b | 0x80);
    }
  }

  /** A little-endian IEEE-754 single. */
  f32(v: number): this {
    const d = new DataView(new ArrayBuffer(4));
    d.setFloat32(0, v, true);
    return this.bytes(new Uint8Array(d.buffer));
  }

  /** A name: byte length then UTF-8. */
  name(s: string): this {
    const b = new TextEncoder().encode(s);
    return this.u32(b.length).bytes(b);
  }

  /** The bytes written so far (a copy). */
  finish(): Uint8Array {
    return this.buf.slice(0, this.len);
  }
}

/** Encodes `v` as unsigned LEB128 (convenience for tests and immediates). */
export function uleb(v: number): Uint8Array {
  return new ByteWriter().u32(v).finish();
}

/** Encodes `v` as signed LEB128. */
export function sleb(v: number): Uint8Array {
  return new ByteWriter().s32(v).finish();
}
