// pnpm hooks of the workspace. Decision 1905: what a published package.json says.
//
// beforePacking runs on `pnpm pack` / `pnpm publish` after pnpm has replaced `workspace:^` (with `^<version>`)
// and `catalog:` (with the catalog's exact pin). The workspace keeps exact pins (CONVENTIONS 15, the lockfile);
// a consumer gets ranges, so two packages that share a dependency share one copy of it: every dependency that
// names `catalog:` is published as `^<pin>`, except the few in BOUNDED, published with the range given there.
const fs = require("node:fs");
const path = require("node:path");

const FIELDS = ["dependencies", "optionalDependencies", "devDependencies"];
const EXACT = /^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$/;

// Ranges narrower than a caret, each with its reason.
const BOUNDED = {
  // fastify 5 takes light-my-request ^6; 6.8 moved to cookie@2, which declares engines node >=22. 6.6 uses
  // cookie@1 (node >=18): @poot/serve depends on it so that npm places it beside fastify and Node 20 installs
  // warn-free.
  "light-my-request": (pin) => `~${pin}`,
};

module.exports = {
  hooks: {
    beforePacking(pkg, dir) {
      const source = JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8"));
      for (const field of FIELDS) {
        for (const [name, spec] of Object.entries(source[field] ?? {})) {
          const pin = pkg[field]?.[name];
          if (typeof spec !== "string" || !spec.startsWith("catalog:") || !EXACT.test(pin ?? "")) continue;
          pkg[field][name] = BOUNDED[name] === undefined ? `^${pin}` : BOUNDED[name](pin);
        }
      }
      return pkg;
    },
  },
};
