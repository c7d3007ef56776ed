// The HIP runtime layer on a machine without ROCm: the typed, one-line `no_runtime` error naming every path
// tried; choosing a code object by gcnArchName, and the typed error for a GPU with none.
import * as fs from "node:fs";
import {
  findGcnArchName,
  HIP_PROTOTYPES,
  hipLibraryCandidates,
  HipRuntime,
  pickCodeObject,
  RocmError,
} from "@poot/backend-rocm";
import koffi from "koffi";
import { describe, expect, test } from "vitest";

const HAVE_ROCM = hipLibraryCandidates().some((p) => p.startsWith("/") && fs.existsSync(p));

function rocmError(f: () => unknown): RocmError {
  try {
    f();
  } catch (err) {
    if (err instanceof RocmError) return err;
    throw err;
  }
  throw new Error("expected a RocmError");
}

describe("HIP runtime", () => {
  test.skipIf(HAVE_ROCM)("no ROCm here: HipRuntime.open throws no_runtime naming the paths tried", () => {
    const e = rocmError(() => HipRuntime.open({ rocmPath: "/nonexistent/rocm-6.2/" }));
    expect(e.code).toBe("no_runtime");
    expect(e.message).not.toContain("\n");
    expect(e.context.tried).toEqual([
      "/nonexistent/rocm-6.2/lib/libamdhip64.so",
      "/opt/rocm/lib/libamdhip64.so",
      "libamdhip64.so",
      "libamdhip64.so.6",
      "libamdhip64.so.5",
    ]);
    expect(e.message).toBe(
      `no ROCm runtime: libamdhip64 not found (tried ${(e.context.tried ?? []).join(", ")}); install ROCm or set ROCM_PATH`,
    );
  });

  test("every HIP prototype is valid koffi syntax (the binding itself waits for a machine with ROCm)", () => {
    for (const [name, proto] of Object.entries(HIP_PROTOTYPES)) {
      expect(() => koffi.proto(proto.replace(/^(.*?)\b(hip\w+)\(/, "$1$2_t(")), name).not.toThrow();
    }
    expect(() => koffi.proto("int broken(unknown_type x)")).toThrow();
  });

  test("the code object is chosen by the GPU's base architecture; a GPU without one gets no_code_object", () => {
    const objects = { gfx90a: "A", gfx942: "B", gfx1100: "C" };
    expect(pickCodeObject("gfx942:sramecc+:xnack-", objects)).toBe("B");
    expect(pickCodeObject("gfx1100", objects)).toBe("C");
    const e = rocmError(() => pickCodeObject("gfx1030", objects));
    expect(e.code).toBe("no_code_object");
    expect(e.message).toBe("no code object for this GPU (gfx1030); code objects exist for gfx1100, gfx90a, gfx942");
    expect(e.context).toMatchObject({ arch: "gfx1030", available: ["gfx1100", "gfx90a", "gfx942"] });
  });

  test("gcnArchName is found after the device name in a raw hipDeviceProp_t", () => {
    const props = new Uint8Array(2048);
    props.set(new TextEncoder().encode("AMD Instinct MI300X gfx000"), 0);
    props.set(new TextEncoder().encode("gfx942:sramecc+:xnack-"), 1160);
    expect(findGcnArchName(props)).toBe("gfx942:sramecc+:xnack-");
    expect(findGcnArchName(new Uint8Array(2048))).toBeUndefined();
  });
});
