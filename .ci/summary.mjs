// Prints the plain closing line CI reads ("tests: N passed, N failed, N skipped") from vitest's JSON report.
// A missing or unreadable report is itself a failure: it means the test command did not run to the end.
import { readFileSync } from "node:fs";

const file = process.argv[2];
let report;
try {
  report = JSON.parse(readFileSync(file, "utf8"));
} catch (err) {
  console.error(`no vitest report at ${file}: ${err.message}`);
  process.exit(1);
}
const skipped = (report.numPendingTests ?? 0) + (report.numTodoTests ?? 0);
console.log(`\ntests: ${report.numPassedTests} passed, ${report.numFailedTests} failed, ${skipped} skipped`);
if (report.numTotalTests === 0) {
  console.error("no test ran");
  process.exit(1);
}
