/**
 * Help as the README promises it, through the real CLI: every leaf command's `-h` has examples,
 * its exit codes and the WDS_ environment variables it reads. The leaf commands are found by
 * walking the CLI's own `-h` (a command whose help lists commands is a group), so a command added
 * later is covered without touching this file. Also: did-you-mean for commands and options, and
 * `--version` meaning the program's version on every command, the legacy ones included.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { ROOT, runCli } from '../helpers/cli-process.js';
import { tempDir } from '../helpers/export.js';

const help = async (path: string[]): Promise<string> => {
  const run = await runCli([...path, '-h']);
  expect(run.code, `${path.join(' ')} -h: ${run.stderr}`).toBe(0);
  return run.stdout;
};

/** The lines of one section of a help text ("Commands:", "Exit codes:"...), up to the next blank line. */
function section(text: string, title: string): string[] {
  const lines = text.split('\n');
  const start = lines.indexOf(`${title}:`);
  if (start < 0) return [];
  const end = lines.findIndex((line, i) => i > start && line.trim() === '');
  return lines.slice(start + 1, end < 0 ? undefined : end);
}

/** The subcommands a group's help lists, as words: `wds-files archive list <archive>` gives `list`. */
function subcommands(text: string, path: string[]): string[] {
  return section(text, 'Commands').map((line) => /^ {2}wds-files (\S+(?: [^\s<[]+)*)/.exec(line)?.[1]).filter((words): words is string => words !== undefined)
    .map((words) => words.split(' ')).filter((words) => words.length === path.length + 1).map((words) => words.at(-1)!);
}

interface Leaf {
  path: string[];
  text: string;
}

/** Every leaf command of the CLI with its help, found from `wds-files -h` down. */
async function leafCommands(): Promise<Leaf[]> {
  const leaves: Leaf[] = [];
  const visit = async (path: string[]): Promise<void> => {
    const text = await help(path);
    const children = subcommands(text, path);
    if (!children.length) {
      leaves.push({ path, text });
      return;
    }
    await Promise.all(children.map((child) => visit([...path, child])));
  };
  await visit([]);
  return leaves;
}

/** The WDS_ variables the source reads (process.env.WDS_X, env.WDS_X, (... ?? process.env).WDS_X), but npm start's own. */
function variablesRead(): string[] {
  const names = new Set<string>();
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith('.ts') && path !== join(ROOT, 'src/cli/start.ts')) {
        for (const m of readFileSync(path, 'utf8').matchAll(/\benv\)?\.(WDS_[A-Z_]+)/g)) names.add(m[1]!);
      }
    }
  };
  walk(join(ROOT, 'src'));
  return [...names].sort();
}

const CONNECTION = ['WDS_BASE_URL', 'WDS_CONSUMER_KEY', 'WDS_CONSUMER_SECRET', 'WDS_TOKEN_CACHE'];

/**
 * The WDS_ variables a command must list, from what its help says it takes: a connection
 * (`--base-url`, or a pipeline file, which holds one) reads the connection's variables and the
 * client's limit windows (the legacy client's, for a legacy command); an option that names a
 * variable reads it; every command reads the code cache's.
 */
function expectedVariables(leaf: Leaf): string[] {
  const names = new Set(['WDS_CODE_CACHE']);
  if (/^ +--base-url /m.test(leaf.text) || /Pipeline files?\b/.test(leaf.text)) {
    for (const name of CONNECTION) names.add(name);
    names.add(leaf.path[0] === 'legacy' ? 'WDS_LEGACY_LIMITS' : 'WDS_CLIENT_LIMITS');
  }
  for (const line of section(leaf.text, 'Options')) for (const m of line.matchAll(/\benv (WDS_[A-Z_]+)/g)) names.add(m[1]!);
  return [...names].sort();
}

describe('every leaf command\'s -h', () => {
  let leaves: Leaf[];
  beforeAll(async () => {
    leaves = await leafCommands();
  }, 120_000);

  it('the walk finds the leaf commands of every group', () => {
    const names = leaves.map((leaf) => leaf.path.join(' '));
    // A few known ones, so that a walk that stopped early (a changed help layout) cannot pass.
    for (const name of ['photos export', 'attachments import', 'archive check', 'legacy sheet', 'emulator', 'completion']) expect(names).toContain(name);
    expect(names.length).toBeGreaterThanOrEqual(20);
  });

  it('has examples of that command', () => {
    for (const leaf of leaves) {
      const examples = section(leaf.text, 'Examples');
      expect(examples.some((line) => line.includes(`wds-files ${leaf.path.join(' ')}`)), `${leaf.path.join(' ')} -h:\n${leaf.text}`).toBe(true);
    }
  });

  it('has its exit codes, 0, 1 and 2 at least, each with its meaning', () => {
    for (const leaf of leaves) {
      const lines = section(leaf.text, 'Exit codes');
      // One line each: a meaning too long for the help's width would wrap without its indent.
      for (const line of lines) expect(line, `${leaf.path.join(' ')} -h`).toMatch(/^ {2}\d+ +\S/);
      const codes = lines.map((line) => Number(/^ {2}(\d+)/.exec(line)?.[1]));
      expect(codes, `${leaf.path.join(' ')} -h:\n${leaf.text}`).toEqual(expect.arrayContaining([0, 1, 2]));
      expect(codes).toEqual([...codes].sort((a, b) => a - b));
    }
  });

  it('lists exactly the WDS_ variables it reads', () => {
    for (const leaf of leaves) {
      const lines = section(leaf.text, 'Environment');
      for (const line of lines) expect(line, `${leaf.path.join(' ')} -h`).toMatch(/^ {2}[A-Z_]+ +\S/);
      const listed = lines.map((line) => /^ {2}(WDS_[A-Z_]+) /.exec(line)?.[1]).filter((name): name is string => name !== undefined);
      expect(listed.sort(), `${leaf.path.join(' ')} -h:\n${leaf.text}`).toEqual(expectedVariables(leaf));
    }
  });

  it('the variables the code reads are each described in wds-files -h, and listed by a command', async () => {
    const top = section(await help([]), 'Environment').join('\n');
    const listedByLeaves = new Set(leaves.flatMap((leaf) => section(leaf.text, 'Environment').map((line) => line.trim().split(' ')[0]!)));
    for (const name of variablesRead()) {
      expect(top).toMatch(new RegExp(`^ {2}${name} +\\S`, 'm'));
      expect(listedByLeaves.has(name), `${name} is read but no command's -h lists it`).toBe(true);
    }
  });
});

describe('completion --help', () => {
  it('shows its help, not the script', async () => {
    const run = await runCli(['completion', '--help']);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('Print a bash or zsh completion script');
    expect(run.stdout).toContain('Exit codes:');
    expect(run.stdout).not.toContain('###-begin-wds-files-completions-###');
    const script = await runCli(['completion']);
    expect(script.stdout).toContain('###-begin-wds-files-completions-###');
  });
});

describe('did you mean', () => {
  it('a misspelt subcommand is named before the options that follow it', async () => {
    const run = await runCli(['photos', 'exprot', '--out', join(tempDir(), 'x')]);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('Unknown command "exprot". Did you mean "export"?');
    expect(run.stderr).not.toContain('--out');
  });

  it('a misspelt option is named rather than the required option it left out', async () => {
    const run = await runCli(['photos', 'export', '--outt', join(tempDir(), 'x')]);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('Unknown option "--outt". Did you mean "--out"?');
    const sheet = await runCli(['legacy', 'sheet', '--outt', 'x.csv']);
    expect(sheet.code).toBe(2);
    expect(sheet.stderr).toContain('Unknown option "--outt". Did you mean "--out"?');
  });

  it('a misspelt negation is named as typed', async () => {
    const run = await runCli(['photos', 'export', '-o', join(tempDir(), 'x'), '--no-forse']);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('Unknown option "--no-forse". Did you mean "--no-force"?');
  });
});

describe('--version', () => {
  it('is the program\'s version on the legacy commands as everywhere', async () => {
    const { version } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };
    for (const path of [[], ['photos', 'export'], ['legacy', 'sheet'], ['legacy', 'api']]) {
      const run = await runCli([...path, '--version']);
      expect(run.code, run.stderr).toBe(0);
      expect(run.stdout.trim()).toBe(version);
    }
  });

  it('with a value, the old spelling of --api-version, is refused pointing to --api-version', async () => {
    const out = join(tempDir(), 'members.csv');
    for (const args of [['legacy', 'sheet', '0', '--out', out, '--version', 'v1.2'], ['legacy', 'api', '/department', '--version=v1.0']]) {
      const run = await runCli(args);
      expect(run.code).toBe(2);
      expect(run.stderr).toContain('--version takes no value: it prints the version of wds-files');
      expect(run.stderr).toMatch(/--api-version v1\.[02]/);
      expect(run.stdout).toBe('');
    }
  });
});
