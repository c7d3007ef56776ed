// mapLimited keeps at most `limit` validations in flight and the input order; the report names each failure.
import { describe, expect, test } from "vitest";
import { mapLimited, validationReport } from "./kernels-validate.js";

describe("mapLimited", () => {
  test("never runs more than the limit at once, and returns results in input order", async () => {
    let inFlight = 0,
      peak = 0;
    const delays = [30, 5, 20, 1, 15, 2, 8];
    const out = await mapLimited(delays, 2, async (ms) => {
      peak = Math.max(peak, ++inFlight);
      await new Promise((r) => setTimeout(r, ms));
      inFlight--;
      return ms * 10;
    });
    expect(peak).toBe(2);
    expect(out).toEqual([300, 50, 200, 10, 150, 20, 80]);
  });
});

describe("validationReport", () => {
  test("counts kernels and lists each failing one with its first message line; unavailable is a failure", () => {
    const text = validationReport("ptx", [
      { name: "a", runs: [{ label: "sm_90", result: { status: "ok", tool: "ptxas" } }] },
      {
        name: "b",
        runs: [
          { label: "sm_90", result: { status: "invalid", tool: "ptxas", message: "line 5; error\nfatal" } },
          { label: "sm_80", result: { status: "ok", tool: "ptxas" } },
        ],
      },
      {
        name: "c",
        runs: [{ label: "sm_80", result: { status: "unavailable", tool: "ptxas", reason: "not installed" } }],
      },
    ]);
    expect(text.split("\n")[0]).toBe(
      "ptx: kernels 3, passed 1, failed 2: b (sm_90: line 5; error), c (sm_80: validator unavailable: not installed)",
    );
    expect(text).toContain("--- b (sm_90, ptxas)\nline 5; error\nfatal\n");
  });
});
