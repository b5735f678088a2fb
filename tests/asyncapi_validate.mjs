// Validates an AsyncAPI document with the official parser (@asyncapi/parser),
// resolving the relative $refs to schemas/ and examples/ from the file's
// folder. Prints one line per diagnostic; exits 0 when the document is valid
// (no error-level diagnostics), 1 when it is not, 2 on bad usage.
//
//   node tests/asyncapi_validate.mjs topics/asyncapi.yaml
//
// Install the parser first: (cd tests && npm ci --ignore-scripts).
import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { Parser, fromFile } from '@asyncapi/parser';

const SEVERITY = ['error', 'warning', 'info', 'hint'];

async function main() {
  const file = process.argv[2];
  if (!file) {
    console.error('usage: node asyncapi_validate.mjs <asyncapi.yaml>');
    return 2;
  }
  const path = resolve(file);
  await readFile(path); // a clear ENOENT before the parser's own message
  const parser = new Parser();
  const { document, diagnostics } = await fromFile(parser, path).parse();
  let errors = 0;
  for (const d of diagnostics) {
    const sev = SEVERITY[d.severity] ?? String(d.severity);
    if (d.severity === 0) errors++;
    console.log(`${sev}: ${d.code}: ${d.message} at ${JSON.stringify(d.path)}`);
  }
  if (!document || errors > 0) {
    console.log(`INVALID: ${path} (${errors} error(s))`);
    return 1;
  }
  const channels = document.channels().length;
  const operations = document.operations().length;
  const messages = document.components().messages().length;
  console.log(`VALID: ${path}: asyncapi ${document.version()}, ${channels} channels, ${operations} operations, ${messages} messages`);
  return 0;
}

main().then((code) => process.exit(code), (err) => {
  console.error(`asyncapi_validate: ${err && err.stack ? err.stack : err}`);
  process.exit(1);
});
