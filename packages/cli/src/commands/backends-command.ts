// `poot backends`: each backend with its status on this machine (available / missing package / no driver /
// no device), its device and what `--backend auto` picks.
import { BACKEND_ROLES, probeBackend, resolveAuto, type BackendStatus } from "./backend-probe.js";
import type { CommandModule } from "./index.js";

/** The `backends` subcommand. */
export const backendsCommand: CommandModule = {
  name: "backends",
  register: (program, io) => {
    program
      .command("backends")
      .description("list the backends, whether each works here (and why not) and its device; say what auto picks")
      .option("--json", "print one JSON object: { auto, backends: [{ name, status, device, gpu, detail }] }")
      .action(async (o: { json?: boolean }) => {
        const statuses: BackendStatus[] = [];
        for (const name of Object.keys(BACKEND_ROLES).filter((n) => n !== "auto"))
          statuses.push(await probeBackend(name, statuses));
        const auto = (await resolveAuto()).backend;
        if (o.json === true) {
          io.out(`${JSON.stringify({ auto, backends: statuses }, null, 1)}\n`);
          return;
        }
        const width = (f: (s: BackendStatus) => string) => Math.max(...statuses.map((s) => f(s).length));
        const wn = width((s) => s.name);
        const ws = width((s) => s.status);
        for (const s of statuses) {
          const what = s.status === "available" ? (s.device ?? "") : s.detail;
          const note = s.status === "available" && s.detail !== "" ? ` — ${s.detail}` : "";
          io.out(`${s.name.padEnd(wn)}  ${s.status.padEnd(ws)}  ${what}${note}\n`);
        }
        io.out(`auto -> ${auto} (${BACKEND_ROLES["auto"]})\n`);
      });
  },
};
