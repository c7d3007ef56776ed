// `poot ir FILE.json`: reads a graph saved as graph-ir JSON (graphToJsonString), validates it and prints
// it one equation per line with the graph-ir printer.
import { GraphError, graphFromJson, printGraph } from "@poot/graph-ir";
import { readTextFile } from "@poot/serve";
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
        const text = readTextFile(file, "ir");
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
