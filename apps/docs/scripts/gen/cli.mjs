// The CLI reference page, generated from the commander program the `poot` binary runs (never hand-copied):
// each command's usage, description, arguments and options with their defaults, and its --help text.
import { join } from "node:path";
import { CLI_PACKAGE, bufferIo, createProgram } from "../cli-source.mjs";
import { DOCS, cell, write } from "./paths.mjs";

/** Plain data of one commander command. */
function describe(cmd) {
  return {
    name: cmd.name(),
    usage: cmd.usage(),
    description: cmd.description(),
    arguments: cmd.registeredArguments.map((a) => ({
      name: a.name(),
      required: a.required,
      variadic: a.variadic,
      description: a.description,
      default: a.defaultValue,
    })),
    options: cmd.options.map((o) => ({
      flags: o.flags,
      description: o.description,
      required: o.mandatory === true,
      default: o.defaultValue,
    })),
    help: cmd.helpInformation(),
  };
}

/** The commands of the `poot` program, as data (also written for tests). */
export function cliModel() {
  const program = createProgram({ io: bufferIo() });
  return { package: CLI_PACKAGE, program: describe(program), commands: program.commands.map(describe) };
}

/** Writes src/content/docs/reference/cli.md; returns the model. */
export function generateCli() {
  const m = cliModel();
  const L = [
    "---",
    "title: CLI reference",
    "description: Every poot command, argument and option, generated from the CLI's own command definitions.",
    "---",
    "",
    `This page is generated at build time from the commander program in \`${m.package}\` — the same objects`,
    "`poot --help` prints — so it cannot drift from the binary.",
    "",
    "| command | what it does |",
    "| --- | --- |",
    ...m.commands.map((c) => `| [\`poot ${c.name}\`](#poot-${c.name}) | ${cell(c.description)} |`),
    "",
  ];
  for (const c of m.commands) {
    L.push(`## poot ${c.name}`, "", cell(c.description), "", "```", `poot ${c.name} ${c.usage}`, "```", "");
    if (c.arguments.length > 0) {
      L.push("| argument | required | description |", "| --- | --- | --- |");
      for (const a of c.arguments)
        L.push(`| \`${a.name}${a.variadic ? "..." : ""}\` | ${a.required ? "yes" : "no"} | ${cell(a.description)} |`);
      L.push("");
    }
    L.push("| option | description | default |", "| --- | --- | --- |");
    for (const o of c.options) {
      const def = o.default === undefined ? (o.required ? "required" : "") : `\`${cell(JSON.stringify(o.default))}\``;
      L.push(`| \`${cell(o.flags)}\` | ${cell(o.description)} | ${def} |`);
    }
    L.push(
      "",
      "<details><summary><code>--help</code></summary>",
      "",
      "```text",
      c.help.trimEnd(),
      "```",
      "",
      "</details>",
      "",
    );
  }
  write(join(DOCS, "reference/cli.md"), L.join("\n"));
  return m;
}
