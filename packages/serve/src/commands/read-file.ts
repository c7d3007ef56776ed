// Reading a file named on the command line: its failure as one line, `no such file or folder (file PATH)`,
// in the words @poot/models uses for models, not Node's errno text repeating the path.
import * as fs from "node:fs";
import { ioError } from "@poot/models";
import { CliError } from "../errors.js";

/**
 * Reads `file` as UTF-8 for `command`; a missing, unreadable or folder path throws a `file-unreadable` CliError of
 * one line naming the file (e.g. `no such file or folder (file /x.json)`).
 */
export function readTextFile(file: string, command: string): string {
  try {
    return fs.readFileSync(file, "utf8");
  } catch (err) {
    throw new CliError("file-unreadable", ioError(err, file, "read").message, { command, file });
  }
}
