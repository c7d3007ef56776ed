// The lowering cache through `poot run --backend cpu`: the first run writes the entries, a planted corruption (one
// byte of each entry's body flipped) is reported on stderr, the entry rebuilt and never used (the greedy text is
// still the forward driver's), and the run after that hits every entry without a warning.
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { bufferIo, runCli } from "@poot/cli";
import { LoadedModel, loadTokenizer } from "@poot/models";
import { fixture, needFixture } from "@poot/testkit";
import { afterAll, describe, expect, test } from "vitest";

const NO_FIXTURES = needFixture("hf/llama3");
const HAVE = NO_FIXTURES === undefined;

describe.skipIf(!HAVE)(`the CLI's lowering cache${HAVE ? "" : ` (skipped: ${NO_FIXTURES})`}`, () => {
  const cacheRoot = fs.mkdtempSync(path.join(os.tmpdir(), "poot-cli-lowering-"));
  const entries = path.join(cacheRoot, "lowered");
  const saved = process.env["POOT_CACHE_DIR"];
  afterAll(() => {
    if (saved === undefined) delete process.env["POOT_CACHE_DIR"];
    else process.env["POOT_CACHE_DIR"] = saved;
    fs.rmSync(cacheRoot, { recursive: true, force: true });
  });

  test("a corrupted entry is reported and rebuilt, never used; the next run hits without a warning", async () => {
    const dir = path.join(fixture(), "hf", "llama3");
    const prompt = "The quick brown fox";
    const tok = loadTokenizer(dir);
    const m = LoadedModel.open(dir);
    const want = `${tok.decode(m.generate(tok.encode(prompt, { addSpecial: true }), 6).ids, { skipSpecial: true })}\n`;
    m.close();
    process.env["POOT_CACHE_DIR"] = cacheRoot;
    const run = async () => {
      const io = bufferIo();
      const argv = ["run", dir, "--backend", "cpu", "--prompt", prompt, "--temperature", "0", "--max-tokens", "6"];
      const code = await runCli([...argv, "--ignore-eos"], { io });
      return { code, out: io.stdout(), err: io.stderr() };
    };
    const first = await run();
    expect([first.code, first.out]).toEqual([0, want]);
    expect(first.err).not.toContain("lowering cache");
    const files = fs.readdirSync(entries).filter((f) => f.endsWith(".lowered.json"));
    expect(files.length).toBeGreaterThan(0);
    // Planted corruption: one byte in the body of every entry (a kernel's code or a plan's number, both wrong).
    for (const f of files) {
      const file = path.join(entries, f);
      const text = fs.readFileSync(file, "utf8");
      const at = text.length - 40;
      fs.writeFileSync(file, text.slice(0, at) + (text[at] === "7" ? "8" : "7") + text.slice(at + 1));
    }
    const second = await run();
    expect([second.code, second.out]).toEqual([0, want]);
    const warnings = second.err.split("\n").filter((l) => l.includes("lowering cache entry"));
    expect(warnings).toHaveLength(files.length);
    for (const w of warnings) expect(w).toMatch(/is corrupted \(hash mismatch\); rebuilding it$/);
    const third = await run();
    expect([third.code, third.out]).toEqual([0, want]);
    expect(third.err).not.toContain("lowering cache");
    expect(
      fs
        .readdirSync(entries)
        .filter((f) => f.endsWith(".lowered.json"))
        .sort(),
    ).toEqual(files.sort());
  }, 180_000);
});
