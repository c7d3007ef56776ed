// `poot serve` with no MODEL and no --config serves the bundled demo model, as `poot run` and `poot chat` do: the
// real bin, asked through the official openai client, completes the demo's reference prompt greedily to the demo's
// own reference (models/demo/reference.json, written with the model by its training script), not poot's output.
import { type ChildProcess, spawn } from "node:child_process";
import * as fs from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { bufferIo, runCli } from "@poot/cli";
import OpenAI from "openai";
import { afterAll, describe, expect, test } from "vitest";

const pkgDir = join(dirname(fileURLToPath(import.meta.url)), "..");
const bin = join(pkgDir, "bin/poot.mjs");
const ref = JSON.parse(fs.readFileSync(join(pkgDir, "../../models/demo/reference.json"), "utf8")) as {
  prompt: string;
  prompt_ids: number[];
  greedy_ids: number[];
  greedy_text: string;
};

/** Starts `poot serve ARGS` and resolves with its URL once it listens (or rejects with its stderr if it exits). */
function startBin(args: string[]): { child: ChildProcess; url: Promise<string> } {
  const child = spawn(process.execPath, [bin, "serve", ...args], { stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  const url = new Promise<string>((resolve, reject) => {
    child.stderr!.on("data", (d: Buffer) => {
      stderr += d.toString();
      const m = /^poot serve: (\S+) .* on (http:\/\/\S+)$/m.exec(stderr);
      if (m !== null) resolve(`${m[1]} ${m[2]}`);
    });
    child.on("exit", (code) => reject(new Error(`poot serve exited ${code}: ${stderr}`)));
  });
  return { child, url };
}

describe("poot serve without MODEL", () => {
  let server: ChildProcess | undefined;
  afterAll(async () => {
    if (server === undefined || server.exitCode !== null) return;
    const exited = new Promise((resolve) => server!.on("exit", resolve));
    server.kill("SIGTERM");
    await exited;
  });

  test("--help says the demo model is the default", async () => {
    const io = bufferIo();
    expect(await runCli(["serve", "--help"], { io })).toBe(0);
    expect(io.stdout().replace(/\s+/g, " ")).toContain("(default, without --config: the bundled demo model)");
  });

  test("serves the demo model: greedy completion of its reference prompt equals its reference", {
    timeout: 300_000,
  }, async () => {
    const started = startBin(["--backend", "cpu", "--port", "0", "--ctx", "64", "--drain-seconds", "0"]);
    server = started.child;
    const [id, url] = (await started.url).split(" ") as [string, string];
    expect(id).toBe("demo");
    const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: "none", maxRetries: 0, timeout: 300_000 });
    const r = await client.completions.create({
      model: "demo",
      prompt: ref.prompt,
      max_tokens: ref.greedy_ids.length,
      temperature: 0,
    });
    expect(r.usage?.prompt_tokens).toBe(ref.prompt_ids.length);
    expect(r.usage?.completion_tokens).toBe(ref.greedy_ids.length);
    expect(r.choices[0]!.text).toBe(ref.greedy_text);
  });
});
