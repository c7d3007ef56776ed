// `poot chat` through the bin with a piped stdin: the first answer equals transformers' greedy chat answer of the
// demo model (reference.json), a second turn answers too, `/exit` leaves; Ctrl-C stops a long answer and the
// chat goes on.
import { spawn } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import { expect, test } from "vitest";

const pkgDir = path.join(path.dirname(fileURLToPath(import.meta.url)), "..");
const bin = path.join(pkgDir, "bin/poot.mjs");
const ref = JSON.parse(fs.readFileSync(path.join(pkgDir, "../../models/demo/reference.json"), "utf8")) as {
  chat_messages: { content: string }[];
  chat_greedy_ids: number[];
  chat_greedy_text: string;
};

test("two turns and /exit: the first answer is transformers' greedy chat answer", { timeout: 180_000 }, async () => {
  const child = spawn(
    process.execPath,
    [bin, "chat", "demo", "--temperature", "0", "-n", String(ref.chat_greedy_ids.length)],
    { stdio: ["pipe", "pipe", "pipe"] },
  );
  let out = "";
  child.stdout.on("data", (d: Buffer) => void (out += d.toString()));
  child.stdin.end(`${ref.chat_messages[0]!.content}\nAnd another one?\n/exit\nnever read\n`);
  const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
  expect(code).toBe(0);
  expect(out.startsWith(`${ref.chat_greedy_text}\n`)).toBe(true);
  const second = out.slice(ref.chat_greedy_text.length + 1);
  expect(second.trim().length).toBeGreaterThan(0);
  expect(second.endsWith("\n")).toBe(true);
});

test("Ctrl-C stops the current answer; the chat goes on to /exit", { timeout: 180_000 }, async () => {
  const child = spawn(process.execPath, [bin, "chat", "demo", "--temperature", "0", "-n", "100000", "-c", "2048"], {
    stdio: ["pipe", "pipe", "pipe"],
  });
  let out = "";
  child.stdout.on("data", (d: Buffer) => void (out += d.toString()));
  child.stdin.write("Tell me a long story.\n");
  // Once the answer streams, interrupt it.
  await new Promise<void>((resolve) => {
    const poll = setInterval(() => {
      if (out.length > 20) {
        clearInterval(poll);
        resolve();
      }
    }, 50);
  });
  child.kill("SIGINT");
  child.stdin.end("/exit\n");
  const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
  expect(code).toBe(0);
  expect(out.endsWith("\n")).toBe(true);
  // Far fewer than the 2000-odd tokens the context allowed.
  expect(out.length).toBeLessThan(4000);
});
