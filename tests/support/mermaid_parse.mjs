// Parses Mermaid files with Mermaid's own parser (npm's `mermaid`, under jsdom), for tests/streams.
// Usage: node mermaid_parse.mjs TOOLS_DIR FILE...   where TOOLS_DIR holds node_modules/{mermaid,jsdom}
// (`make diagram-tools` installs them in .tools/mermaid). Prints one JSON line per file: {"file", "ok", "error"}.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";

const [toolsDir, ...files] = process.argv.slice(2);
const require = createRequire(join(resolve(toolsDir), "package.json"));
const { JSDOM } = require("jsdom");
const dom = new JSDOM("<!doctype html><html><body></body></html>");
globalThis.window = dom.window;
globalThis.document = dom.window.document;
const { default: mermaid } = await import(pathToFileURL(require.resolve("mermaid")).href);
mermaid.initialize({ startOnLoad: false });
for (const file of files) {
  try {
    const result = await mermaid.parse(readFileSync(file, "utf8"));
    console.log(JSON.stringify({ file, ok: true, diagram: result.diagramType }));
  } catch (error) {
    console.log(JSON.stringify({ file, ok: false, error: String(error?.message ?? error) }));
  }
}
