// Builds the prebuilt native kernels for linux-x64 (decision 0952): `pnpm --filter @poot/backend-cpu build:native`.
// Needs gcc; users never run it (the object is committed). The sha256 of the sources and flags is embedded in the
// object, and src/native/stale.test.ts fails when the committed object was built from other sources.
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { NATIVE_TARGETS, sourceHash } from "./source-hash.mjs";

const here = fileURLToPath(new URL(".", import.meta.url));
const target = NATIVE_TARGETS["linux-x64"];
const hash = sourceHash(here);
const tmp = mkdtempSync(join(tmpdir(), "poot-native-"));
try {
  const cc = process.env.CC ?? "gcc";
  const objects = target.units.map((u) => {
    const out = join(tmp, `${u.name}.o`);
    execFileSync(
      cc,
      [...target.common, ...u.flags, `-DPOOT_SOURCE_HASH="${hash}"`, "-c", join(here, "src", u.source), "-o", out],
      { stdio: "inherit" },
    );
    return out;
  });
  const dir = join(here, "prebuilt", "linux-x64");
  mkdirSync(dir, { recursive: true });
  execFileSync(cc, [...target.link, "-o", join(dir, target.library), ...objects], { stdio: "inherit" });
  console.log(`built ${join(dir, target.library)} (sources ${hash})`);
} finally {
  rmSync(tmp, { recursive: true, force: true });
}
