import { describe, expect, test } from "vitest";
import { sleb, uleb } from "./bytes.js";

// Reference encodings from the LEB128 definition (DWARF 4 §7.6 examples and the Wasm spec's integer rules).
describe("LEB128", () => {
  test.each([
    [0, [0x00]],
    [2, [0x02]],
    [127, [0x7f]],
    [128, [0x80, 0x01]],
    [129, [0x81, 0x01]],
    [130, [0x82, 0x01]],
    [12857, [0xb9, 0x64]],
    [624485, [0xe5, 0x8e, 0x26]],
    [0xffffffff, [0xff, 0xff, 0xff, 0xff, 0x0f]],
  ])("unsigned %i", (v, bytes) => expect([...uleb(v)]).toEqual(bytes));
  test.each([
    [0, [0x00]],
    [2, [0x02]],
    [-2, [0x7e]],
    [63, [0x3f]],
    [64, [0xc0, 0x00]],
    [-64, [0x40]],
    [-65, [0xbf, 0x7f]],
    [127, [0xff, 0x00]],
    [-127, [0x81, 0x7f]],
    [128, [0x80, 0x01]],
    [-128, [0x80, 0x7f]],
    [-123456, [0xc0, 0xbb, 0x78]],
    [-2147483648, [0x80, 0x80, 0x80, 0x80, 0x78]],
    [2147483647, [0xff, 0xff, 0xff, 0xff, 0x07]],
  ])("signed %i", (v, bytes) => expect([...sleb(v)]).toEqual(bytes));
});
