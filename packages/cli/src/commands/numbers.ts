// Numeric option parsing is shared with the `serve` command in @poot/serve.
export { parseNumber } from "@poot/serve";
