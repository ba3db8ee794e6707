/**
 * Bundles the compiled CLI (`<out>/cli/main.js`, from tsc) into one CommonJS file,
 * `<out>/cli/wds-files.cjs`, and writes over main.js the entry that runs it with V8's code cache
 * (src/cli/code-cache.ts). Node then reads one file at start instead of some 400 (ours, yargs',
 * zod's, undici's...), and compiles little of it once a command ran before. The photo checker's
 * child script and the worker threads' modules are bundled on their own. The SDK (`<out>/index.js`
 * and the rest) stays tsc's output, one module per source file.
 *
 *   node scripts/bundle-cli.mjs dist
 *
 * Everything lands in `<out>/cli/`, at the depth main.js had: the code that finds the package's
 * root (`../..`), the photo checker's child script (`./photo-check-child.js`) and the worker
 * modules (`./hash-worker.js`, `./linker-worker.js`) from its own module's URL finds them from the
 * bundle as it did from tsc's files.
 */
import { build } from 'esbuild';
import { createHash } from 'node:crypto';
import { chmod, readFile, writeFile } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import process from 'node:process';

const out = resolve(process.argv[2] ?? 'dist');
const here = dirname(fileURLToPath(import.meta.url));

/** `undici` itself, in the bundle, is the part of it the CLI uses (scripts/undici-cli.mjs); its own files stay undici's. */
const slimUndici = {
  name: 'slim-undici',
  setup(build) {
    build.onResolve({ filter: /^undici$/ }, () => ({ path: join(here, 'undici-cli.mjs') }));
  },
};
/**
 * A plugin that replaces `find` with `replacement` in the one file `filter` matches. `find` must be
 * there exactly once (and `check`, if given, must hold), or the build fails: an update of the
 * dependency that changes that code is noticed rather than bundled unchanged.
 */
function replaceOnce(name, filter, find, replacement, check = () => true) {
  return {
    name,
    setup(build) {
      build.onLoad({ filter }, async ({ path }) => {
        const source = await readFile(path, 'utf8');
        if (source.split(find).length !== 2 || !check(source)) throw new Error(`bundle-cli: ${path} no longer has the code ${name} rewrites; see scripts/bundle-cli.mjs`);
        return { contents: source.replace(find, () => replacement), loader: 'js' };
      });
    },
  };
}
/**
 * yargs finds "its" package.json (for the version it shows by default) by walking up from the
 * folder above its node_modules, reading each folder's entries. Bundled, its module is no longer
 * under node_modules and it walked up from the working directory instead: a run started in a
 * folder of 20,000 photos, or under a large /tmp, read every name there at each start. The
 * bundle sits in `<package>/dist/cli/`, so the package's root is `../..` from it.
 */
const yargsRoot = replaceOnce(
  'yargs-root',
  /[\\/]yargs[\\/]lib[\\/]platform-shims[\\/]esm\.mjs$/,
  "const mainFilename = __dirname.substring(0, __dirname.lastIndexOf('node_modules'));",
  "const mainFilename = fileURLToPath(new URL('../..', import.meta.url));",
);
/**
 * string-width (yargs' and cliui's copies) makes an Intl.Segmenter and Unicode-property regexps
 * (\p{RGI_Emoji} among them) when its module is evaluated: 30-40 ms of ICU work at every start,
 * help or not. Here its body runs at the first width asked of a string that is not all printable
 * ASCII, which is one column a character in every version (version 8 takes that path itself).
 */
const lazyStringWidth = {
  name: 'lazy-string-width',
  setup(build) {
    build.onLoad({ filter: /[\\/]string-width[\\/]index\.js$/ }, async ({ path }) => {
      const source = await readFile(path, 'utf8');
      if (!/^export default function stringWidth\(/m.test(source)) return undefined; // the CommonJS version 4 makes nothing at load
      const lines = source.split('\n');
      const imports = lines.filter((line) => /^import .* from '[^']+';$/.test(line));
      const body = lines.filter((line) => !imports.includes(line)).join('\n');
      if (/^\s*(import|export)\b/m.test(body.replace(/^export default function stringWidth\(/m, ''))) {
        throw new Error(`bundle-cli: ${path} no longer has the shape lazyStringWidth expects (imports, then one default export)`);
      }
      return {
        contents: `${imports.join('\n')}
let stringWidthNow;
export default function stringWidth(...args) {
  if (typeof args[0] === 'string' && /^[\\u0020-\\u007E]*$/.test(args[0])) return args[0].length;
  stringWidthNow ??= (() => {
${body.replace(/^export default function stringWidth\(/m, 'function stringWidth(')}
return stringWidth;
  })();
  return stringWidthNow(...args);
}
`,
        loader: 'js',
      };
    });
  },
};
/**
 * When a command's handler starts, yargs renders that command's whole help and keeps it, for a
 * failure message shown after the handler's promise rejects. Our .fail() never shows help, so that
 * render (cliui, string widths) was CPU taken from every run's first requests.
 */
const noHelpCache = replaceOnce(
  'no-help-cache',
  /[\\/]yargs[\\/]build[\\/]lib[\\/]command\.js$/,
  'yargs.getInternalMethods().getUsageInstance().cacheHelpMessage();',
  '',
);
/**
 * zod's namespace `z` carries `z.locales`, its error messages in 60-odd languages: half of its
 * bundled source, parsed at every start that loads zod. wds-files speaks English only, so the
 * bundle's `locales` holds `en` alone.
 */
const zodEnglishOnly = {
  name: 'zod-english-only',
  setup(build) {
    build.onResolve({ filter: /^\.\.\/locales\/index\.js$/ }, ({ importer }) => {
      if (!/[\\/]zod[\\/]v4[\\/](classic|core)[\\/]/.test(importer)) return undefined;
      return { path: join(dirname(importer), '..', 'locales', 'en.js'), namespace: 'zod-locales' };
    });
    build.onLoad({ filter: /.*/, namespace: 'zod-locales' }, ({ path }) => ({
      contents: `export { default as en } from ${JSON.stringify(path)};`,
      resolveDir: dirname(path),
      loader: 'js',
    }));
  },
};
/**
 * undici's HTTP/1.1 client requires its HTTP/2 one, and with it Node's http2 module (about 5 ms of
 * every start that loads the client), though a connection speaks HTTP/2 only when allowH2 is set,
 * which wds-files never does. Here the HTTP/2 client loads at its first HTTP/2 connection.
 */
const lazyUndiciH2 = replaceOnce(
  'lazy-undici-h2',
  /[\\/]undici[\\/]lib[\\/]dispatcher[\\/]client\.js$/,
  "const connectH2 = require('./client-h2.js')",
  "let connectH2Now\nconst connectH2 = (...args) => (connectH2Now ??= require('./client-h2.js'))(...args)",
  // connectH2 is only called, once: the wrapper stands for it.
  (source) => source.split('connectH2').length === 3,
);
const cli = join(out, 'cli');
const plugins = [slimUndici, yargsRoot, lazyStringWidth, noHelpCache, zodEnglishOnly, lazyUndiciH2];
const common = {
  bundle: true,
  platform: 'node',
  target: 'node20.19',
  // sharp loads its native binary, pino starts its transports from files beside its modules, and
  // heic-decode's wasm build is large and needed only for HEIC, and the AWS SDK (1.5 MB bundled)
  // only for a bucket archive, and pg (its optional native binding cannot be bundled) and pg-boss
  // only with a database: each stays a package loaded at run time.
  external: ['sharp', 'pino', 'heic-decode', '@aws-sdk/client-s3', 'pg', 'pg-boss'],
  allowOverwrite: true,
  legalComments: 'eof',
  logLevel: 'warning',
};

// The CLI: one CommonJS file, which main.js runs with V8's code cache (src/cli/code-cache.ts).
// import() of our modules and of the packages left out becomes a require, as a script run
// through `vm.Script` has no loader for import().
const bundle = join(cli, 'wds-files.cjs');
await build({
  ...common,
  entryPoints: [join(cli, 'main.js')],
  outfile: bundle,
  format: 'cjs',
  supported: { 'dynamic-import': false },
  define: { 'import.meta.url': '__wdsImportMetaUrl' },
  banner: { js: "const __wdsImportMetaUrl = require('node:url').pathToFileURL(__filename).href;" },
  plugins,
});

// The photo checker's child process (src/stages/import/check/photo-check-child.ts), a module of its own.
await build({
  ...common,
  entryPoints: [join(out, 'stages', 'import', 'check', 'photo-check-child.js')],
  outfile: join(cli, 'photo-check-child.js'),
  format: 'esm',
  // The CommonJS packages bundled require Node's modules, which an ES module can do only through a require of its own.
  banner: { js: "import { createRequire as __wdsCreateRequire } from 'node:module';\nconst require = __wdsCreateRequire(import.meta.url);" },
  plugins,
});

// The worker threads' modules (src/util/worker-module.ts), each a file of its own beside the
// bundle, where the bundled hash-file.ts and linker.ts look for them. They take only Node's modules
// and ours, so they need no require of their own.
for (const worker of [join('util', 'hash-worker.js'), join('archive', 'linker-worker.js')]) {
  await build({ ...common, entryPoints: [join(out, worker)], outfile: join(cli, basename(worker)), format: 'esm', plugins });
}

// The bundle as code-cache.ts compiles it: already in the function CommonJS wraps a module in, so
// that no copy of its 3.5 MB is made at each start, and ASCII alone (esbuild leaves comments and
// regular expressions as they were), so that V8 holds it one byte a character, not two.
const text = (await readFile(bundle, 'utf8'))
  .replace(/^#!.*\n/, '')
  .replace(/[\u0080-\u{10ffff}]/gu, (c) => c.split('').map((unit) => `\\u${unit.charCodeAt(0).toString(16).padStart(4, '0')}`).join(''));
// Strict, as the ES modules it was bundled from were (esbuild's own "use strict" comes after the banner, too late to count).
const wrapped = `(function (exports, require, module, __filename, __dirname) {'use strict';${text}\n})`;
await writeFile(bundle, wrapped);

// main.js starts the bundle through the code cache, whose files are named by the bundle's hash.
const bundleId = createHash('sha256').update(wrapped).digest('hex').slice(0, 16);
await writeFile(join(cli, 'main.js'), `#!/usr/bin/env node
// The CLI's entry: runs wds-files.cjs, the bundled CLI, with V8's code cache (src/cli/code-cache.ts).
import { runBundle } from './code-cache.js';

runBundle(new URL('./wds-files.cjs', import.meta.url), '${bundleId}');
`);
await chmod(join(cli, 'main.js'), 0o755);
