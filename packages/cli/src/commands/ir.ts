// `poot ir FILE.json`: reads a graph saved as graph-ir JSON (graphToJsonString), validates it and prints
// it one equation per line with the graph-ir printer.
import { readFileSync } from "node:fs";
import { GraphError, graphFromJson, printGraph } from "@poot/graph-ir";
import { CliError } from "../errors.js";
import type { CommandModule } from "./index.js";

/** The `ir` subcommand. */
export const ir: CommandModule = {
  name: "ir",
  register: (program, io) => {
    program
      .command("ir")
      .description("print a graph saved as graph-ir JSON, one equation per line")
      .argument("<file>", "graph JSON file (as written by graphToJsonString)")
      .action((file: string) => {
        let text: string;
        try {
          text = readFileSync(file, "utf8");
        } catch (err) {
          throw new CliError("file-unreadable", `cannot read ${file}: ${(err as Error).message}`, {
            command: "ir",
            file,
          });
        }
        let graph;
        try {
          graph = graphFromJson(text);
        } catch (err) {
          // A malformed graph is the user's input; anything else is a bug and propagates.
          if (!(err instanceof GraphError)) throw err;
          throw new CliError("bad-input", `${file}: ${err.message}`, { command: "ir", file });
        }
        io.out(printGraph(graph));
      });
  },
};
