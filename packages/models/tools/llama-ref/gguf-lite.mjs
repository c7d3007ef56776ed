// A minimal GGUF v3 reader for the fixture tool (tensor names, types and bytes), independent of @poot/models so the
// fixtures' dequantization hashes do not pass through the code they test.
import * as fs from "node:fs";

const TYPE_NAMES = {
  0: "F32",
  1: "F16",
  2: "Q4_0",
  3: "Q4_1",
  6: "Q5_0",
  7: "Q5_1",
  8: "Q8_0",
  10: "Q2_K",
  11: "Q3_K",
  12: "Q4_K",
  13: "Q5_K",
  14: "Q6_K",
  20: "IQ4_NL",
  23: "IQ4_XS",
  30: "BF16",
  39: "MXFP4",
};
// [block elems, block bytes]
const BLOCK = {
  F32: [1, 4],
  F16: [1, 2],
  BF16: [1, 2],
  Q4_0: [32, 18],
  Q4_1: [32, 20],
  Q5_0: [32, 22],
  Q5_1: [32, 24],
  Q8_0: [32, 34],
  Q2_K: [256, 84],
  Q3_K: [256, 110],
  Q4_K: [256, 144],
  Q5_K: [256, 176],
  Q6_K: [256, 210],
  IQ4_NL: [32, 18],
  IQ4_XS: [256, 136],
  MXFP4: [32, 17],
};

/** Every tensor of a GGUF file: name, type name, dims (ggml order), bytes. */
export function readGGUFTensors(file) {
  const buf = fs.readFileSync(file);
  let o = 0;
  const u32 = () => {
    const v = buf.readUInt32LE(o);
    o += 4;
    return v;
  };
  const u64 = () => {
    const v = Number(buf.readBigUInt64LE(o));
    o += 8;
    return v;
  };
  const str = () => {
    const n = u64();
    const s = buf.toString("utf8", o, o + n);
    o += n;
    return s;
  };
  const SIZES = { 0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8 };
  const skip = (t) => {
    if (t === 8) {
      str();
      return;
    }
    if (t === 9) {
      const et = u32(),
        n = u64();
      for (let i = 0; i < n; i++) skip(et);
      return;
    }
    o += SIZES[t];
  };
  if (buf.toString("ascii", 0, 4) !== "GGUF") throw new Error(`${file}: not GGUF`);
  o = 4;
  u32();
  const nT = u64(),
    nKV = u64();
  let alignment = 32;
  for (let i = 0; i < nKV; i++) {
    const k = str(),
      t = u32();
    if (k === "general.alignment") {
      alignment = buf.readUInt32LE(o);
    }
    skip(t);
  }
  const infos = [];
  for (let i = 0; i < nT; i++) {
    const name = str(),
      nd = u32(),
      dims = [];
    for (let d = 0; d < nd; d++) dims.push(u64());
    const type = TYPE_NAMES[u32()],
      off = u64();
    infos.push({ name, dims, type, off });
  }
  const data = Math.ceil(o / alignment) * alignment;
  return infos.map((t) => {
    const [be, bb] = BLOCK[t.type];
    const n = t.dims.reduce((a, b) => a * b, 1);
    return { ...t, bytes: buf.subarray(data + t.off, data + t.off + (n / be) * bb) };
  });
}
