// `--backend rocm` on a machine without ROCm, through the bin: `poot backends` lists rocm as "no driver" naming
// the library paths tried (ROCM_PATH's first), and `poot run --backend rocm` prints one line and exits 1.
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, test } from "vitest";

const bin = join(dirname(fileURLToPath(import.meta.url)), "../bin/poot.mjs");
const ROCM_PATH = "/nonexistent/rocm-6.3";
const env = { ...process.env, ROCM_PATH };
const HAVE_ROCM =
  fs.existsSync("/opt/rocm/lib/libamdhip64.so") ||
  (process.env["ROCM_PATH"] !== undefined && fs.existsSync(join(process.env["ROCM_PATH"], "lib/libamdhip64.so")));

describe.skipIf(HAVE_ROCM)("--backend rocm without a ROCm runtime", () => {
  test('poot backends: rocm is "no driver", naming the paths tried', { timeout: 120_000 }, () => {
    const r = spawnSync(process.execPath, [bin, "backends", "--json"], { encoding: "utf8", env, timeout: 120_000 });
    expect(r.status, r.stderr).toBe(0);
    const rocm = (
      JSON.parse(r.stdout) as { backends: { name: string; status: string; detail: string }[] }
    ).backends.find((b) => b.name === "rocm");
    expect(rocm?.status).toBe("no driver");
    expect(rocm?.detail).toMatch(
      new RegExp(
        `^no ROCm runtime: libamdhip64 not found \\(tried ${ROCM_PATH}/lib/libamdhip64.so, /opt/rocm/lib/libamdhip64.so, `,
      ),
    );
  });

  test("poot run --backend rocm: one line on stderr, exit 1", { timeout: 120_000 }, () => {
    const r = spawnSync(process.execPath, [bin, "run", "--backend", "rocm", "-p", "hello"], {
      encoding: "utf8",
      env,
      input: "",
      timeout: 120_000,
    });
    expect(r.status).toBe(1);
    expect(r.stdout).toBe("");
    const lines = r.stderr.split("\n").filter((l) => l.startsWith("poot:"));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      /^poot: --backend rocm: needs an AMD GPU and the ROCm runtime \(libamdhip64\) \(no ROCm runtime: .*\); install ROCm/,
    );
    expect(r.stderr).not.toMatch(/\n\s+at /);
  });
});
