// Errors of the poot CLI: CliError (one line for the user, exit code 1) is @poot/serve's, so that the
// `serve` command defined there and the commands here throw the one class runCli turns into exit codes.
export { CliError, invariant } from "@poot/serve";
export type { CliErrorCode } from "@poot/serve";
