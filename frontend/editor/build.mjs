// Builds the policy editor's bundle into policies_app/static/policies_app/editor/ (committed, so the
// app never needs node): one minified IIFE (window.RegoEditor), its stylesheet, and the licence of every
// package bundled in it. The bundle's first line names each bundled package at the version the lock file
// pins; tests/web/test_editor_bundle.py compares it with package-lock.json. Run it through bin/build-editor.
import { build } from "esbuild";
import { copyFileSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const out = resolve(here, "../../policies_app/static/policies_app/editor");
const lock = JSON.parse(readFileSync(join(here, "package-lock.json"), "utf8"));

const result = await build({
  entryPoints: [join(here, "src/editor.js")],
  bundle: true,
  format: "iife",
  globalName: "RegoEditor",
  minify: true,
  target: ["es2020"],
  legalComments: "none", // the licences are shipped whole, beside the bundle
  write: false,
  metafile: true,
  logLevel: "warning",
});

// The packages the bundle holds, by the folder each input came from, with the version the lock pins.
const bundled = new Map();
for (const input of Object.keys(result.metafile.inputs)) {
  const match = /(?:^|\/)node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(input);
  if (!match) continue;
  const entry = lock.packages[`node_modules/${match[1]}`];
  if (!entry) throw new Error(`${match[1]} is bundled but not in package-lock.json`);
  bundled.set(match[1], entry.version);
}
const names = [...bundled.keys()].sort();
const header = `/*! policy editor bundle: ${names.map((name) => `${name}@${bundled.get(name)}`).join(" ")} */\n`;

rmSync(out, { recursive: true, force: true });
mkdirSync(join(out, "licenses"), { recursive: true });
writeFileSync(join(out, "editor.js"), header + result.outputFiles[0].text);
copyFileSync(join(here, "src/editor.css"), join(out, "editor.css"));
for (const name of names) {
  const folder = join(here, "node_modules", name);
  const licence = readdirSync(folder).find((file) => /^(LICEN[CS]E|COPYING)/i.test(file));
  if (!licence) throw new Error(`${name} ships no licence file`);
  copyFileSync(join(folder, licence), join(out, "licenses", `${name.replace("/", "__")}.txt`));
}
writeFileSync(
  join(out, "licenses", "README.txt"),
  "Licences of the packages bundled in editor.js (all MIT), one file per package, named after it\n" +
    "(@scope/name as @scope__name). Versions: the first line of editor.js and frontend/editor/package-lock.json.\n",
);
console.log(`editor.js: ${names.length} packages, ${result.outputFiles[0].text.length} bytes`);
