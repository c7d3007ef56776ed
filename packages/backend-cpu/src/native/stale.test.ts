// The committed prebuilt object must be built from the committed C sources: its embedded sha256 (native/build.mjs
// writes it) equals the hash of native/src and the build flags now. Fails after a kernel edit without a rebuild.
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, test } from "vitest";
import { loadNodeNative, prebuiltPath } from "./node-library.js";

const nativeDir = fileURLToPath(new URL("../../native/", import.meta.url));

describe("the prebuilt native kernels", () => {
  test("linux-x64's object embeds the hash of the current sources (else: pnpm --filter @poot/backend-cpu build:native)", async () => {
    const hashModule = new URL("../../native/source-hash.mjs", import.meta.url).href;
    const { sourceHash } = (await import(hashModule)) as { sourceHash(dir: string): string };
    const want = sourceHash(nativeDir);
    const path = prebuiltPath("linux", "x64");
    expect(path, "native/prebuilt/linux-x64/libpoot_cpu.so is committed").not.toBeNull();
    // Read as bytes, so the check runs on any machine, not only where the object loads.
    expect(
      readFileSync(path!).includes(Buffer.from(want)),
      `the object was built from other sources than ${want}`,
    ).toBe(true);
    const lib = process.platform === "linux" && process.arch === "x64" ? loadNodeNative() : null;
    if (lib !== null) expect(lib.sourceHash).toBe(want);
  });

  test("other platforms have no object (the executor then runs the Wasm kernels)", () => {
    expect(prebuiltPath("darwin", "arm64")).toBeNull();
    expect(prebuiltPath("linux", "arm64")).toBeNull();
  });
});
