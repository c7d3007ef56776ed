// Placement parsing and its one-line errors (a missing device, overlapping or missing layers, bad ranges),
// --gpu-layers against llama.cpp's rule (the last N layers and the output on the accelerator), units and sizes.
import { describe, expect, it } from "vitest";
import { formatPlacement, gpuLayers, parsePlacement, parseSize, unitSpans } from "./placement.js";

const DEV = ["cpu", "cuda"];

describe("placement", () => {
  it("parses ranges, embed and head; embed and head default to their neighbouring layer's device", () => {
    expect(parsePlacement("0-7:cuda,8-15:cpu,head:cuda", 16, DEV).devices).toEqual([
      "cuda",
      ...Array(8).fill("cuda"),
      ...Array(8).fill("cpu"),
      "cuda",
    ]);
    expect(parsePlacement("0:cpu, 1:cuda", 2, DEV).devices).toEqual(["cpu", "cpu", "cuda", "cuda"]);
    expect(formatPlacement(parsePlacement("embed:cuda,0-1:cpu,2-3:cuda", 4, DEV))).toBe("embed:cuda,0-1:cpu,2-3:cuda");
  });

  it("refuses bad input with one line naming the problem", () => {
    const cases: [string, RegExp][] = [
      ["0-15:rocm", /names device "rocm", which is not available \(available: cpu, cuda\)/],
      ["0-8:cpu,8-15:cuda", /"8-15:cuda" overlaps an earlier entry at layer 8/],
      ["0-7:cpu,9-15:cuda", /leaves layer\(s\) 8 unplaced/],
      ["0-7:cpu", /leaves layer\(s\) 8-15 unplaced/],
      ["0-16:cpu", /the model has layers 0-15/],
      ["7-0:cpu", /backwards/],
      ["0-15", /not RANGE:DEVICE/],
      ["0-15:cpu,", /empty entry/],
      ["0-15:cpu,head:cpu,head:cuda", /overlaps an earlier entry at head/],
    ];
    for (const [text, re] of cases) {
      let msg = "";
      try {
        parsePlacement(text, 16, DEV);
      } catch (e) {
        msg = (e as Error).message;
      }
      expect(msg, text).toMatch(re);
      expect(msg).not.toContain("\n");
      expect(
        (() => {
          try {
            parsePlacement(text, 16, DEV);
          } catch (e) {
            return (e as { code: string }).code;
          }
          return "";
        })(),
      ).toBe("bad-placement");
    }
  });

  it("--gpu-layers puts the last N layers and the head on the accelerator (llama.cpp's rule)", () => {
    expect(formatPlacement(gpuLayers(8, 16, "cuda"))).toBe("0-7:cpu,8-15:cuda");
    expect(unitSpans(gpuLayers(8, 16, "cuda"))).toEqual([
      { device: "cpu", first: 0, last: 8 },
      { device: "cuda", first: 9, last: 17 },
    ]);
    expect(formatPlacement(gpuLayers(0, 16, "cuda"))).toBe("0-15:cpu");
    expect(formatPlacement(gpuLayers(99, 16, "cuda"))).toBe("0-15:cuda");
    expect(() => gpuLayers(-1, 16, "cuda")).toThrow(/non-negative integer/);
  });

  it("parses sizes", () => {
    expect(parseSize("512M")).toBe(512 * 2 ** 20);
    expect(parseSize("1.5GiB")).toBe(1.5 * 2 ** 30);
    expect(parseSize("1000")).toBe(1000);
    expect(() => parseSize("lots", "--device-memory")).toThrow(
      /--device-memory must be a size like 512M or 2G, got "lots"/,
    );
  });
});
