// Model and runtime errors met while a command prepares a model, as one-line CliErrors naming the command and file.
import { ModelError } from "@poot/models";
import { RuntimeError } from "@poot/runtime";
import { CliError } from "./errors.js";

/** Runs `fn`, turning model and runtime errors into one-line CliErrors naming the command and model. */
export function cliErrors<T>(command: string, model: string, fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    if (err instanceof RuntimeError)
      throw new CliError("bad-input", err.message.replace(/^\[[a-z-]+\] /, ""), { command, file: model });
    if (err instanceof ModelError)
      throw new CliError(err.code === "io" ? "file-unreadable" : "bad-input", err.message, {
        command,
        file: err.file ?? model,
      });
    throw err;
  }
}
