// Run a MicroPython script with microtrain's pure modules over the wasm core, on Node 20:
//
//   node tools/micropython/run.mjs [--wasm build/presets/wasm32-wasi/micro_core/microtrain.wasm]
//        [--data host_path=/guest/path ...] [--heap 64m] script.py [args...]
//
// The MicroPython WebAssembly port (npm @micropython/micropython-webassembly-pyscript, see
// package.json; `npm ci` here installs it) gets the files py_facade/manifest.py lists under
// /lib/microtrain, the --data files in its filesystem, sys.argv = [script, args...], and
// the JS module _microtrain_js (py_facade/microtrain/backend/microtrain_wasm.mjs) that
// microtrain.backend.loader.load() finds.
// Exit status 1 on an uncaught Python exception (its traceback on stderr).

import { readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { loadMicroPython } from "@micropython/micropython-webassembly-pyscript";
import { loadCore } from "../../py_facade/microtrain/backend/microtrain_wasm.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, "..", "..");
let wasm = join(root, "build", "presets", "wasm32-wasi", "micro_core", "microtrain.wasm");
let heap = 64 * 1024 * 1024;
const data = [];
const args = process.argv.slice(2);
while (args.length && args[0].startsWith("--")) {
  const flag = args.shift();
  const value = args.shift();
  if (flag === "--wasm") wasm = value;
  else if (flag === "--data") data.push(value.split("="));
  else if (flag === "--heap") heap = parseInt(value, 10) * (value.endsWith("m") ? 1 << 20 : 1);
  else { console.error(`run.mjs: unknown flag ${flag}`); process.exit(2); }
}
if (!args.length) { console.error("usage: run.mjs [--wasm f] [--data host=guest] [--heap 64m] script.py [args]"); process.exit(2); }
const script = args[0];

// The package's files, as the freeze manifest lists them.
const manifest = readFileSync(join(root, "py_facade", "manifest.py"), "utf8");
const files = [...manifest.matchAll(/^\s*"([A-Za-z0-9_/]+\.py)",?\s*$/gm)].map((m) => m[1]);

const mp = await loadMicroPython({
  heapsize: heap,
  stdout: (line) => process.stdout.write(line + "\n"),
  stderr: (line) => process.stderr.write(line + "\n"),
});
mp.FS.mkdirTree("/lib/microtrain");
for (const name of files) {
  mp.FS.mkdirTree(dirname(`/lib/microtrain/${name}`));
  mp.FS.writeFile(`/lib/microtrain/${name}`, readFileSync(join(root, "py_facade", "microtrain", name)));
}
for (const [host, guest] of data) {
  mp.FS.mkdirTree(dirname(guest));
  mp.FS.writeFile(guest, readFileSync(host));
}
const core = await loadCore(wasm);
mp.registerJsModule("_microtrain_js", core.module(mp));

mp.runPython(`import sys
sys.argv.clear()
sys.argv.extend(${JSON.stringify(args)})
if "/lib" not in sys.path:
    sys.path.append("/lib")
`);
// The script runs from a file of its own name, so tracebacks name it (not <stdin>).
const guestScript = `/scripts/${script.split("/").pop()}`;
mp.FS.mkdirTree("/scripts");
mp.FS.writeFile(guestScript, readFileSync(script));
try {
  mp.runPython(`__mt_main = {"__name__": "__main__", "__file__": ${JSON.stringify(guestScript)}}
with open(${JSON.stringify(guestScript)}) as __mt_file:
    __mt_code = compile(__mt_file.read(), ${JSON.stringify(guestScript)}, "exec")
exec(__mt_code, __mt_main)
`);
} catch (error) {
  if (error.name !== "PythonError") {
    process.stderr.write(`run.mjs: ${error.name}: ${error.message}\n`);
    process.exit(1);
  }
  if (error.type !== "SystemExit") {
    process.stderr.write(error.message);
    process.exit(1);
  }
}
