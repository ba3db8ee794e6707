/**
 * Pipeline files are checked before anything runs: each problem at its line and column (an
 * unknown key, a wrong type, an unset variable, an invalid cron), `${VAR:-default}` filled in,
 * relative paths taken from the file's folder; the JSON Schema printed by `validate --schema`
 * accepts every example in pipelines/ and refuses what the loader refuses; the examples validate.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { parse as parseYaml } from 'yaml';
import { describe, expect, it } from 'vitest';
import { PipelineFileError, loadPipelineFile, type PipelineProblem } from '../../src/pipeline-files/load.js';
import { ROOT, runCli } from '../helpers/cli-process.js';
import { tempDir } from '../helpers/export.js';

const EXAMPLES = readdirSync(join(ROOT, 'pipelines')).filter((f) => f.endsWith('.yaml')).map((f) => join(ROOT, 'pipelines', f));

async function pipelineFile(text: string): Promise<string> {
  const file = join(tempDir('wds-pipeline-'), 'p.yaml');
  await writeFile(file, text);
  return file;
}

async function problemsOf(text: string, env: NodeJS.ProcessEnv = {}): Promise<PipelineProblem[]> {
  const file = await pipelineFile(text);
  try {
    await loadPipelineFile(file, env);
  } catch (error) {
    if (error instanceof PipelineFileError) return error.problems;
    throw error;
  }
  return [];
}

const BAD = [
  'name: bad-one',
  'schedule: "0 25 * * *"',
  'from:',
  '  service: photos',
  '  sheet: 3',
  'steps:',
  '  - download: { concurrency: many }',
  'to: { folder: "${OUT_DIR}" }',
  '',
].join('\n');

describe('validate', () => {
  it('finds an invalid cron, an unknown key, a wrong type and an unset variable, each at its line and column', async () => {
    const problems = await problemsOf(BAD);
    const at = problems.map((p) => [p.line, p.column, p.message]);
    expect(at).toEqual([
      [2, 11, expect.stringMatching(/not a valid cron pattern "0 25 \* \* \*".*hour/)],
      [5, 3, 'unknown key "sheet" in from'],
      [7, 30, 'steps[0].download.concurrency: must be a number, not a string'],
      [8, 16, expect.stringMatching(/^the variable OUT_DIR is not set, and \$\{OUT_DIR\} has no default/)],
    ]);
  });

  it('on: and debounce: for pipelines run by member events: read as events and milliseconds, bad values refused at their place naming the file', async () => {
    const good = await loadPipelineFile(await pipelineFile('name: x\non: [member_created, member_deleted]\ndebounce: 1m30s\nfrom: { folder: in }\nto: { service: photos }\n'), {});
    expect(good.on).toEqual({ events: ['member_created', 'member_deleted'], debounce_ms: 90_000 });
    const plain = await loadPipelineFile(await pipelineFile('name: x\non: [member_created]\nfrom: { folder: in }\nto: { service: photos }\n'), {});
    expect(plain.on).toEqual({ events: ['member_created'], debounce_ms: 30_000 });
    const file = await pipelineFile('name: x\non: [member_created, member_moved]\ndebounce: soon\nfrom: { folder: in }\nto: { service: photos }\n');
    const run = await runCli(['validate', file]);
    expect(run.code).toBe(2);
    expect(run.stdout + run.stderr).toContain(`${file}:2:22: on[1]: must be a member event: member_created, member_updated, member_deleted`);
    expect(run.stdout + run.stderr).toContain(`${file}:3:11: debounce: must be a duration such as 30s, 2m or 1m30s, not "soon"`);
    expect((await problemsOf('name: x\non: [member_updated, member_updated]\nfrom: { folder: in }\nto: { service: photos }\n')).map((p) => p.message)).toEqual(['on: names an event twice']);
    expect((await problemsOf('name: x\ndebounce: 2h\nfrom: { folder: in }\nto: { service: photos }\n')).map((p) => p.message)).toEqual(['debounce: must be at most 1h']);
    expect((await problemsOf('name: x\ndebounce: 10s\nfrom: { folder: in }\nto: { service: photos }\n')).map((p) => [p.line, p.message])).toEqual([[2, expect.stringContaining('debounce: only a pipeline run by events has one')]]);
  });

  it('a cron of 7 fields and a step no pipeline has are refused, each named', async () => {
    const problems = await problemsOf('name: x\nschedule: { cron: "0 0 4 * * * 2027" }\nfrom: { service: photos }\nsteps:\n  - upload: {}\nto: { zip: x.zip }\n');
    expect(problems.map((p) => [p.line, p.column, p.message])).toEqual([
      [2, 19, expect.stringContaining('5 fields (minute hour day month weekday) or 6 (seconds first), not 7')],
      [5, 5, 'unknown step "upload"; the steps are list, plan, download, sink, read, dedupe, route, check, normalize, batch, submit, report'],
    ]);
  });

  it('rules between parts: retention only for an archive, an import stage in an export, a drop folder moving into itself', async () => {
    const problems = await problemsOf([
      'name: x',
      'from: { folder: inbox, move: { done: inbox/done, refused: refused } }',
      'steps:',
      '  - download: { concurrency: 2 }',
      'to: { service: photos }',
      'retention: { keep_last: 2 }',
      '',
    ].join('\n'));
    expect(problems.map((p) => [p.line, p.message])).toEqual([
      [2, expect.stringContaining('from.move.done: must be outside the folder read')],
      [4, 'steps[0]: "download" is not a stage of an import; its stages are read, dedupe, route, check, normalize, batch, submit, report'],
      [6, expect.stringContaining('retention: only an archive (to: {archive: DIR})')],
    ]);
  });

  it('steps name the stages of the registry: defaults fill the stages not named, a photo option on attachments and the old check.normalize are refused at their place', async () => {
    const file = await pipelineFile('name: x\nfrom: { folder: in }\nsteps:\n  - normalize: { convert: false }\n  - check: { concurrency: 3 }\nto: { service: photos }\n');
    const loaded = await loadPipelineFile(file, {});
    expect(loaded.steps.normalize).toEqual({ convert: false });
    expect(loaded.steps.check).toEqual({ concurrency: 3 });
    // Not named: the stage's defaults.
    expect(loaded.steps.submit).toEqual({ trim: true, dry_run: false });
    const problems = await problemsOf([
      'name: x',
      'from: { folder: in }',
      'steps:',
      '  - check: { normalize: false }',
      '  - normalize: { convert: true }',
      '  - submit: { trim: false }',
      '  - check: { concurrency: 0 }',
      'to: { service: attachments, sheet: 2, field: 1306 }',
      '',
    ].join('\n'));
    expect(problems.map((p) => [p.line, p.column, p.message])).toEqual([
      [4, 14, 'steps[0].check.normalize: converting photos is a stage of its own now; write `- normalize: { convert: true }` (or false) instead'],
      [7, 27, 'steps[3].check.concurrency: must be at least 1'],
    ]);
    // With the other problems gone, the rules between parts speak.
    const between = await problemsOf('name: x\nfrom: { folder: in }\nsteps:\n  - normalize: { convert: true }\n  - submit: { trim: false }\nto: { service: attachments, sheet: 2, field: 1306 }\n');
    expect(between.map((p) => [p.line, p.message])).toEqual([
      [4, 'steps[0].normalize: only photos are converted'],
      [5, 'steps[1].submit.trim: only photos are trimmed'],
    ]);
  });

  it('a missing part, a value outside its choices, a folder named like a zip, a duplicated key, a file that is not a mapping', async () => {
    expect(await problemsOf('name: x\nto: { zip: a.zip }\n')).toEqual([expect.objectContaining({ line: 1, column: 1, message: 'from is required' })]);
    const choices = await problemsOf('name: x\nfrom: { service: photos }\nto: { folder: out }\nnotify: { url: "ftp://x", on: [sometimes] }\n');
    expect(choices.map((p) => [p.line, p.column, p.message])).toEqual([
      [4, 16, 'notify.url: must be an http or https URL'],
      [4, 32, 'notify.on[0]: must be one of success, partial, failure'],
    ]);
    expect(await problemsOf('name: x\nfrom: { service: photos }\nto: { folder: out.zip }\n')).toEqual([
      expect.objectContaining({ line: 3, column: 15, message: expect.stringContaining('to.folder: out.zip ends in .zip') }),
    ]);
    expect(await problemsOf('name: x\nname: y\n')).toEqual([expect.objectContaining({ line: 2, column: 1, message: 'YAML: Map keys must be unique' })]);
    expect(await problemsOf('- name: x\n')).toEqual([expect.objectContaining({ line: 1, column: 1, message: expect.stringContaining('a YAML mapping') })]);
  });

  it('${VAR:-default} and ${VAR} are filled in, a plain ${VAR} read as a number where it is one; paths are taken from the file\'s folder', async () => {
    const file = await pipelineFile([
      'name: ${NAME:-nightly}',
      'connection: { base_url: "${BASE}" }',
      'from:',
      '  service: attachments',
      '  sheets:',
      '    - ${SHEET:-2}',
      'to:',
      '  archive: ${ARCHIVE:-backups}/attachments',
      'retention:',
      '  keep_last: ${KEEP}',
      '',
    ].join('\n'));
    const loaded = await loadPipelineFile(file, { BASE: 'http://127.0.0.1:1', KEEP: '4', SHEET: '' });
    expect(loaded.name).toBe('nightly');
    expect(loaded.connection.base_url).toBe('http://127.0.0.1:1');
    expect(loaded.to).toEqual({ archive: join(file, '..', 'backups', 'attachments') });
    expect(loaded.retention).toEqual({ keep_last: 4 });
    expect(loaded.from).toEqual({ service: 'attachments', sheets: [2], field: undefined });
    // A quoted substitution stays a string, which a sheet id is not.
    const quoted = readFileSync(file, 'utf8').replace('- ${SHEET:-2}', '- "${SHEET:-2}"');
    const problems = await problemsOf(quoted, { BASE: 'x', KEEP: '4' });
    expect(problems.map((p) => [p.line, p.column, p.message])).toEqual([[6, 7, 'from.sheets[0]: must be a number, not a string (a quoted "${VAR}" stays text; for a number in a list, write the list on lines: "- ${VAR}")']]);
  });

  it('the CLI prints FILE:LINE:COLUMN: message and exits 2; the examples in pipelines/ exit 0; two files of one name are refused', async () => {
    const bad = await pipelineFile(BAD);
    const run = await runCli(['validate', bad, ...EXAMPLES]);
    expect(run.code, run.stderr).toBe(2);
    expect(run.stdout.trim().split('\n')).toEqual([
      expect.stringMatching(new RegExp(`^${bad}:2:11: schedule: not a valid cron pattern`)),
      `${bad}:5:3: unknown key "sheet" in from`,
      `${bad}:7:30: steps[0].download.concurrency: must be a number, not a string`,
      expect.stringMatching(new RegExp(`^${bad}:8:16: the variable OUT_DIR is not set`)),
    ]);
    for (const example of EXAMPLES) expect(run.stderr).toContain(`${example}: ok`);

    const good = await runCli(['validate', ...EXAMPLES]);
    expect(good.code, good.stdout + good.stderr).toBe(0);
    expect(good.stdout).toBe('');

    const twin = await pipelineFile(readFileSync(EXAMPLES[0]!, 'utf8'));
    const twice = await runCli(['validate', EXAMPLES[0]!, twin]);
    expect(twice.code).toBe(2);
    expect(twice.stdout).toMatch(new RegExp(`^${twin}:\\d+:\\d+: name: "[a-z-]+" is also the name of ${EXAMPLES[0]}`));
  });

  it('every file in pipelines/ validates against the --schema output with ajv, which refuses an unknown key and a wrong type', async () => {
    const printed = await runCli(['validate', '--schema']);
    expect(printed.code, printed.stderr).toBe(0);
    const schema = JSON.parse(printed.stdout) as Record<string, unknown>;
    // Formats are left to the loader: an example's url may be a ${VAR:-default} until it runs.
    const ajv = new Ajv2020({ allErrors: true, validateFormats: false });
    const check = ajv.compile(schema);
    expect(EXAMPLES.length).toBe(3);
    for (const example of EXAMPLES) {
      const ok = check(parseYaml(readFileSync(example, 'utf8')));
      expect(ok, `${example}: ${ajv.errorsText(check.errors)}`).toBe(true);
    }
    expect(check(parseYaml('name: x\nfrom: { service: photos, sheet: 3 }\nto: { zip: a.zip }\n'))).toBe(false);
    expect(check(parseYaml('name: x\nfrom: { service: photos }\nsteps: [ { download: { concurrency: many } } ]\nto: { zip: a.zip }\n'))).toBe(false);
    expect(check(parseYaml('name: x\nfrom: { service: photos }\nto: { zip: a.zip }\n'))).toBe(true);
    // Every stage of both directions is a step, with its description and its options' defaults.
    const step = (schema.properties as Record<string, { items: { properties: Record<string, { description?: string; properties: Record<string, { default?: unknown }> }> } }>)['steps']!.items;
    expect(Object.keys(step.properties)).toEqual(['list', 'plan', 'download', 'sink', 'read', 'dedupe', 'route', 'check', 'normalize', 'batch', 'submit', 'report']);
    for (const [name, stage] of Object.entries(step.properties)) expect(stage.description, name).toMatch(/^(Export|Import)/);
    expect(step.properties.submit!.properties.trim!.default).toBe(true);
    expect(step.properties.normalize!.properties.convert!.default).toBe(true);
  });
});
