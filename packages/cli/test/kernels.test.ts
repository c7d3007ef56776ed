// `poot kernels`: every kernel emitted for the demo model and each fixture family (decode and prefill) passes its
// target's own validator (ptxas, spirv-val, llc + ld.lld, Tint through Dawn, WebAssembly.validate); planted
// malformed files make `--validate` fail with the validator's message.
import { createHash } from "node:crypto";
import * as fs from "node:fs";
import { homedir, tmpdir } from "node:os";
import * as path from "node:path";
import {
  assembleAmdgpu,
  amdgpuGpusFor,
  assembleAmdgpuMany,
  openDawnDevice,
  validatePtx,
  validateSpirv,
  validateTargetCode,
  type DawnDevice,
  type TargetName,
  type TargetValidation,
  type ValidateOptions,
} from "@poot/codegen";
import { poot } from "./run-poot.js";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { fixture, needFixture, REPO_ROOT } from "@poot/testkit";

const ROOT = REPO_ROOT;
const NO_FIXTURES = needFixture("hf");
const FIX = fixture("hf");
const FAMILIES = ["llama3", "qwen3", "gemma3", "olmoe", "qwen35"];
const HAVE_FIX = NO_FIXTURES === undefined;
const MODELS: [string, string][] = [
  ["demo", path.join(ROOT, "models/demo")],
  ...(HAVE_FIX ? FAMILIES.map((f): [string, string] => [f, path.join(FIX, f)]) : []),
];
const EXT: Record<TargetName, string> = {
  wgsl: "wgsl",
  ptx: "ptx",
  spirv: "spv",
  amdgpu: "ll",
  wasm: "wasm",
  x86: "ll",
};
const TARGETS: TargetName[] = ["wgsl", "ptx", "spirv", "amdgpu", "wasm"];
const TMP = fs.mkdtempSync(path.join(tmpdir(), "poot-kernels-"));

// Which validators are installed (a missing one skips its target, saying why).
const missing: Partial<Record<TargetName, string>> = {};
for (const [t, probe] of [
  ["ptx", () => validatePtx("", { arch: "sm_90" })],
  ["spirv", () => validateSpirv(new Uint8Array(0))],
  ["amdgpu", () => assembleAmdgpu("", { mcpu: "gfx90a" })],
] as const) {
  const r = await probe();
  if (r.status === "unavailable") missing[t] = r.reason;
}
// lavapipe as written by .ci/lavapipe-setup, else the environment's Vulkan driver.
const ICD =
  [path.join(homedir(), ".cache", "lavapipe25", "lvp_icd.json")].find((p) => fs.existsSync(p)) ??
  process.env["VK_DRIVER_FILES"];
let dawn: DawnDevice | undefined;
beforeAll(async () => {
  const r = await openDawnDevice(ICD === undefined ? {} : { vulkanDriverFiles: ICD });
  if (r.ok) dawn = r.dawn;
  else missing.wgsl = r.reason;
});
afterAll(() => {
  dawn?.dispose();
  fs.rmSync(TMP, { recursive: true, force: true });
});

/** Content key of a kernel file: the kernel's own name is the one thing repeated layers and families change. */
function key(target: TargetName, name: string, bytes: Uint8Array): string {
  const h = createHash("sha256").update(target);
  if (target === "spirv" || target === "wasm") h.update(bytes);
  else h.update(new TextDecoder().decode(bytes).split(name).join("\u0000KERNEL\u0000"));
  return h.digest("hex");
}

async function pool<T>(items: readonly T[], limit: number, work: (x: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: limit }, async () => {
      while (next < items.length) await work(items[next++] as T);
    }),
  );
}

const failures = (runs: readonly TargetValidation[]): string[] =>
  runs
    .filter((r) => r.result.status !== "ok")
    .map(
      (r) =>
        `${r.label}: ${r.result.status === "invalid" ? r.result.message : r.result.status === "unavailable" ? r.result.reason : ""}`,
    );

describe(`every kernel of ${MODELS.map((m) => m[0]).join(", ")} (decode and prefill) passes its validator${HAVE_FIX ? "" : ` (fixture families skipped: ${NO_FIXTURES})`}`, () => {
  for (const target of TARGETS) {
    test(`${target}`, async (ctx) => {
      if (missing[target] !== undefined) ctx.skip(`${target} validator unavailable: ${missing[target]}`);
      const t0 = performance.now();
      const unique = new Map<string, { file: string; name: string; bytes: Uint8Array }>();
      let files = 0;
      for (const [fam, dir] of MODELS) {
        for (const mode of ["decode", "prefill"]) {
          const out = path.join(TMP, `${fam}-${mode}-${target}`);
          const r = await poot(
            "kernels",
            dir,
            "--target",
            target,
            "--out",
            out,
            "--mode",
            mode,
            "--tokens",
            mode === "prefill" ? "8" : "1",
          );
          expect(r.err).toBe("");
          expect(r.code).toBe(0);
          const written = fs.readdirSync(out).filter((f) => f.endsWith(`.${EXT[target]}`));
          expect(r.out).toContain(`wrote ${written.length} ${target} kernels`);
          for (const f of written) {
            const bytes = new Uint8Array(fs.readFileSync(path.join(out, f)));
            const name = f.slice(0, -EXT[target].length - 1);
            files++;
            const k = key(target, name, bytes);
            if (!unique.has(k)) unique.set(k, { file: path.join(out, f), name, bytes });
          }
        }
      }
      const t1 = performance.now();
      const opts: ValidateOptions = dawn === undefined ? {} : { wgslDevice: dawn.device };
      const bad: string[] = [];
      if (target === "amdgpu") {
        // Linked in batches (one llc + ld.lld per batch and GPU); a failing batch is retried kernel by kernel.
        const us = [...unique.values()];
        const texts = us.map((u) => new TextDecoder().decode(u.bytes));
        // Each kernel for the GPUs that have its matrix instructions (MFMA: CDNA only; decision 2401).
        for (const mcpu of ["gfx90a", "gfx942", "gfx1100"]) {
          const mine = texts.flatMap((t, i) => (amdgpuGpusFor(t).includes(mcpu) ? [i] : []));
          const rs = await assembleAmdgpuMany(
            mine.map((i) => texts[i]!),
            { mcpu },
          );
          rs.forEach(
            (r, j) =>
              void (
                r.status !== "ok" &&
                bad.push(`${us[mine[j]!]!.file}: ${failures([{ label: mcpu, result: r }]).join("; ")}`)
              ),
          );
        }
      } else
        await pool([...unique.values()], 2, async (u) => {
          const code =
            target === "spirv" || target === "wasm"
              ? { target, binary: u.bytes }
              : { target, text: new TextDecoder().decode(u.bytes) };
          const f = failures(await validateTargetCode(code, opts));
          if (f.length > 0) bad.push(`${u.file}: ${f.join("; ")}`);
        });
      console.log(
        `${target}: ${files} kernel files, ${unique.size} distinct, emitted in ${((t1 - t0) / 1000).toFixed(1)} s, validated in ${((performance.now() - t1) / 1000).toFixed(1)} s`,
      );
      expect(files).toBeGreaterThan(0);
      expect(bad).toEqual([]);
    }, 600_000);
  }
});

describe("poot kernels --validate", () => {
  test("validates the demo model's PTX: the summary counts every file written and exits 0", async (ctx) => {
    if (missing.ptx !== undefined) ctx.skip(`ptxas unavailable: ${missing.ptx}`);
    const out = path.join(TMP, "demo-validate-ptx");
    const r = await poot("kernels", path.join(ROOT, "models/demo"), "--target", "ptx", "--out", out, "--validate");
    const n = fs.readdirSync(out).filter((f) => f.endsWith(".ptx")).length;
    expect(r.code).toBe(0);
    expect(r.out).toContain(`ptx: kernels ${n}, passed ${n}, failed 0\n`);
  }, 300_000);

  test("AMDGPU --validate writes a code object (an ELF file) per kernel and GPU", async (ctx) => {
    if (missing.amdgpu !== undefined) ctx.skip(`llc/ld.lld unavailable: ${missing.amdgpu}`);
    const out = path.join(TMP, "demo-validate-amdgpu");
    fs.mkdirSync(out);
    // One small kernel of the demo model: re-check it from the folder (no MODEL) to keep this quick.
    const src = path.join(TMP, "demo-decode-amdgpu");
    const one = fs.existsSync(src) ? fs.readdirSync(src).find((f) => f.endsWith(".ll")) : undefined;
    if (one === undefined) {
      const w = await poot("kernels", path.join(ROOT, "models/demo"), "--target", "amdgpu", "--out", src);
      expect(w.code).toBe(0);
    }
    const ll = fs
      .readdirSync(src)
      .filter((f) => f.endsWith(".ll"))
      .sort()[0] as string;
    fs.copyFileSync(path.join(src, ll), path.join(out, ll));
    const r = await poot("kernels", "--target", "amdgpu", "--out", out, "--validate");
    expect(r.code).toBe(0);
    for (const gpu of ["gfx90a", "gfx942", "gfx1100"]) {
      const bytes = fs.readFileSync(path.join(out, `${ll.slice(0, -3)}.${gpu}.hsaco`));
      expect([...bytes.subarray(0, 4)]).toEqual([0x7f, 0x45, 0x4c, 0x46]);
    }
  }, 300_000);

  // A planted file per target, and the text its validator answers with (the tools' own wording).
  const PLANTED: { target: TargetName; bytes: Uint8Array; says: RegExp }[] = [
    {
      target: "ptx",
      bytes: new TextEncoder().encode(
        ".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry planted() {\n  mov.u32 %r1, 1;\n  ret;\n}\n",
      ),
      says: /ptxas .*error *: Unknown symbol '%r1'/,
    },
    {
      target: "spirv",
      bytes: new Uint8Array([0x03, 0x02, 0x23, 0x07, 0x00, 0x03, 0x01, 0x00, 0, 0, 0, 0]),
      says: /error: line 0: Invalid SPIR-V header/,
    },
    {
      target: "amdgpu",
      bytes: new TextEncoder().encode("define amdgpu_kernel void @planted() {\n  %x = add i32 %y, 1\n  ret void\n}\n"),
      says: /use of undefined value '%y'/,
    },
    {
      target: "wasm",
      bytes: new Uint8Array([0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, 0x01, 0x05]),
      says: /section \(code 1, "Type"\) extends past end of the module/,
    },
    {
      target: "wgsl",
      bytes: new TextEncoder().encode("@compute @workgroup_size(1) fn main() { let x: f32 = undefined_thing; }\n"),
      says: /unresolved value 'undefined_thing'/,
    },
  ];
  for (const p of PLANTED) {
    test(`a planted malformed .${EXT[p.target]} fails ${p.target} validation with the validator's message`, async (ctx) => {
      if (missing[p.target] !== undefined) ctx.skip(`${p.target} validator unavailable: ${missing[p.target]}`);
      // One real kernel of the demo model beside the planted file: only the planted one fails.
      const out = path.join(TMP, `planted-${p.target}`);
      expect((await poot("kernels", path.join(ROOT, "models/demo"), "--target", p.target, "--out", out)).code).toBe(0);
      const real = fs.readdirSync(out).sort();
      for (const f of real.slice(1)) fs.rmSync(path.join(out, f));
      fs.writeFileSync(path.join(out, `planted.${EXT[p.target]}`), p.bytes);
      if (p.target === "wgsl" && ICD !== undefined) process.env["VK_DRIVER_FILES"] = ICD;
      const r = await poot("kernels", "--target", p.target, "--out", out, "--validate");
      expect(r.code).toBe(1);
      expect(r.out).toMatch(new RegExp(`^${p.target}: kernels 2, passed 1, failed 1: planted \\(`));
      expect(r.out).toMatch(p.says);
      expect(r.err).toContain(`1 of 2 ${p.target} kernels failed validation`);
    }, 120_000);
  }
});
