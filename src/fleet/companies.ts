/**
 * `companies.yaml` (DESIGN.md section 14): each company's service, credentials and pipeline files,
 * read as pipeline files are read (YAML, `${VAR}`, a zod schema, every problem at its line). The
 * consumer secret comes from a variable or a file, never from the companies file itself: that file
 * is configuration that gets copied, committed and mounted. It stays in memory and is never
 * written to the database. Each pipeline file is loaded once per company with `${COMPANY}` set to
 * the company's name, and checked for what a fleet cannot run.
 */
import { readFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { isMap } from 'yaml';
import { z } from 'zod';
import { baseUrlProblem } from '../client/option-schema.js';
import { isBucketAddress } from '../archive/bucket/address.js';
import { loadPipelineFile, locate, PipelineFileError, substituteVariables, type LoadedPipeline } from '../pipeline-files/load.js';
import { cronProblem } from '../pipeline-files/schema.js';
import { registerSecret } from '../util/redact.js';
import { flattenIssues, issueMessage, openYaml, placeOf, syntaxProblem, type FileProblem } from '../util/yaml-places.js';

/** A companies file that cannot be run, with each of its problems (and its pipeline files'). */
export class CompaniesFileError extends Error {
  constructor(readonly problems: FileProblem[]) {
    super(problems.map((p) => `${p.file}:${p.line}:${p.column}: ${p.message}`).join('\n'));
    this.name = 'CompaniesFileError';
  }
}

/** One company of the fleet, its secret read and its pipelines loaded for it. */
export interface FleetCompany {
  name: string;
  baseUrl: string;
  consumerKey: string;
  /** In memory only: never logged (it is registered as a secret) and never stored. */
  consumerSecret: string;
  /** By name; each connects with the company's credentials. */
  pipelines: Map<string, LoadedPipeline>;
}

const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

const companySchema = z.strictObject({
  name: z.string().regex(NAME, 'a company name is letters, digits, dots, dashes and underscores, starting with a letter or digit').describe('Unique; `${COMPANY}` in its pipeline files'),
  base_url: z.string().superRefine((url, ctx) => {
    const problem = baseUrlProblem(url);
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  }),
  consumer_key: z.string().min(1, 'consumer_key must not be empty'),
  consumer_secret: z.string().min(1, 'consumer_secret must not be empty').optional().describe('${VAR}: the secret from an environment variable'),
  secret_file: z.string().min(1, 'secret_file must name a file').optional().describe('A file whose first line is the consumer secret (a Kubernetes or Docker secret, a systemd credential); relative to the companies file'),
  pipelines: z.array(z.string().min(1, 'must name a pipeline file')).min(1, 'pipelines: name at least one pipeline file'),
});

const companiesSchema = z.strictObject({
  companies: z.array(companySchema).min(1, 'companies: list at least one company'),
});

/** Why a pipeline cannot run in a fleet, or null. */
export function fleetProblem(pipeline: LoadedPipeline): { path: (string | number)[]; message: string } | null {
  const { to } = pipeline;
  const local = 'folder' in to ? `to.folder ${to.folder}` : 'zip' in to ? `to.zip ${to.zip}` : 'archive' in to && !isBucketAddress(to.archive) ? `to.archive ${to.archive}` : null;
  if (local) {
    return {
      path: ['to'],
      message: `${local} is on this machine's disk: a fleet run may be taken over by a worker on another machine, which cannot see it, so a fleet writes only to the service or to an archive in a bucket (to: {archive: s3://BUCKET/\${COMPANY}/...})`,
    };
  }
  if (Object.keys(pipeline.connection).length) {
    return { path: ['connection'], message: 'connection: in a fleet each company\'s service and credentials come from the companies file; remove connection from the pipeline file' };
  }
  const seconds = pipeline.schedule?.cron.trim().split(/\s+/);
  if (seconds?.length === 6 && !/^0+$/.test(seconds[0]!)) {
    return { path: ['schedule'], message: `schedule: a fleet starts runs at whole minutes (pg-boss's cron), so a pattern with seconds must have 0 seconds, not "${seconds[0]}"` };
  }
  return null;
}

/** Reads `file` and the pipeline files it names; `env` fills `${VAR}`. Throws CompaniesFileError naming every problem. */
export async function loadCompanies(file: string, env: NodeJS.ProcessEnv = process.env): Promise<FleetCompany[]> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new CompaniesFileError([{ file, line: 1, column: 1, message: code === 'ENOENT' ? 'no such file' : `cannot be read (${code ?? (error as Error).message})` }]);
  }
  const { doc, problems, at } = openYaml(text, file);
  const syntax = syntaxProblem(doc);
  if (syntax) {
    at(syntax.offset, syntax.message);
    throw new CompaniesFileError(problems);
  }
  if (!isMap(doc.contents)) {
    at(doc.contents?.range?.[0] ?? 0, 'a companies file is a YAML mapping with a list of companies (companies: [- name: ..., base_url: ...])');
    throw new CompaniesFileError(problems);
  }
  // Written as text before substitution: a secret must come from a variable, not sit in the file.
  const written = doc.toJS() as { companies?: { consumer_secret?: unknown }[] };
  const unset = substituteVariables(doc, env, at);
  const parsed = companiesSchema.safeParse(doc.toJS());
  if (!parsed.success) {
    for (const issue of flattenIssues(parsed.error.issues)) {
      const place = placeOf(doc, issue);
      if (unset.some(([start, end]) => place >= start && place < end)) continue;
      const index = issue.path[0] === 'companies' && typeof issue.path[1] === 'number' ? issue.path[1] : null;
      // Inside a company, the field is named from the company: `base_url`, not `companies[2].base_url`.
      at(place, index === null ? issueMessage(issue) : `${companyLabel(written, index)}: ${issueMessage({ ...issue, path: issue.path.slice(2) })}`);
    }
    throw new CompaniesFileError(problems);
  }

  const dir = dirname(resolve(file));
  const names = new Map<string, number>();
  const keys = new Map<string, string>();
  const companies: FleetCompany[] = [];
  for (const [index, entry] of parsed.data.companies.entries()) {
    const here = (key: string, message: string): void => at(placeOf(doc, { code: 'custom', path: ['companies', index, key] }), `company ${entry.name}: ${message}`);
    if (names.has(entry.name)) here('name', `the name is taken by companies[${names.get(entry.name)}]; a name keys the company's runs, so names must differ`);
    names.set(entry.name, index);
    const earlier = keys.get(entry.consumer_key);
    if (earlier) here('consumer_key', `the consumer key is company ${earlier}'s too; one company's key shares its limits, so two entries would run as one company`);
    keys.set(entry.consumer_key, entry.name);
    const secret = await secretOf(entry, written.companies?.[index]?.consumer_secret, dir, here);
    if (secret === null) continue;
    const pipelines = new Map<string, LoadedPipeline>();
    for (const [at2, path] of entry.pipelines.entries()) {
      const pipelineFile = resolve(dir, path);
      let pipeline: LoadedPipeline;
      try {
        pipeline = await loadPipelineFile(pipelineFile, { ...env, COMPANY: entry.name });
      } catch (error) {
        if (!(error instanceof PipelineFileError)) throw error;
        // The pipeline file's own places, told which company read it (`${COMPANY}` differs by company).
        problems.push(...error.problems.map((p) => ({ ...p, message: `${p.message} (company ${entry.name})` })));
        continue;
      }
      const problem = fleetProblem(pipeline) ?? (pipeline.schedule ? cronAsMessage(pipeline.schedule.cron) : null);
      if (problem) {
        problems.push(await locate(pipelineFile, path, problem.path, `${problem.message} (company ${entry.name})`));
        continue;
      }
      if (pipelines.has(pipeline.name)) {
        at(placeOf(doc, { code: 'custom', path: ['companies', index, 'pipelines', at2] }), `company ${entry.name}: two of its pipeline files are named "${pipeline.name}"; \`fleet run ${entry.name} PIPELINE\` names a pipeline by its name, so names must differ`);
        continue;
      }
      pipeline.connection = { base_url: entry.base_url, consumer_key: entry.consumer_key, consumer_secret: secret };
      pipelines.set(pipeline.name, pipeline);
    }
    companies.push({ name: entry.name, baseUrl: entry.base_url, consumerKey: entry.consumer_key, consumerSecret: secret, pipelines });
  }
  // The companies file's problems first, each file's in the order of its lines.
  const order = [file];
  if (problems.length) throw new CompaniesFileError(problems.sort((a, b) => (a.file === b.file ? a.line - b.line || a.column - b.column : a.file === order[0] ? -1 : b.file === order[0] ? 1 : a.file.localeCompare(b.file))));
  return companies;
}

const cronAsMessage = (cron: string): { path: string[]; message: string } | null => {
  const problem = cronProblem(cron);
  return problem ? { path: ['schedule'], message: problem } : null;
};

function companyLabel(written: { companies?: unknown[] }, index: number): string {
  const name = (written.companies?.[index] as { name?: unknown } | undefined)?.name;
  return typeof name === 'string' && name ? `company ${name}` : `companies[${index}]`;
}

/** The consumer secret of a company: from `${VAR}` or `secret_file`; null when a problem was reported. */
async function secretOf(
  entry: z.infer<typeof companySchema>, written: unknown, dir: string, here: (key: string, message: string) => void,
): Promise<string | null> {
  if (entry.consumer_secret !== undefined && entry.secret_file !== undefined) {
    here('secret_file', 'give consumer_secret or secret_file, not both');
    return null;
  }
  if (entry.consumer_secret !== undefined) {
    if (typeof written !== 'string' || !/\$\{[A-Za-z_][A-Za-z0-9_]*(:-[^}]*)?\}/.test(written)) {
      here('consumer_secret', 'write ${VARIABLE} (the secret in an environment variable) or use secret_file: a companies file gets copied and committed, so it never holds a secret itself');
      return null;
    }
    registerSecret(entry.consumer_secret);
    return entry.consumer_secret;
  }
  if (entry.secret_file === undefined) {
    here('name', 'needs consumer_secret: ${VARIABLE} or secret_file: PATH');
    return null;
  }
  const path = resolve(dir, entry.secret_file);
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    here('secret_file', `${path} cannot be read (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`);
    return null;
  }
  const secret = text.split(/\r?\n/, 1)[0]!;
  registerSecret(secret);
  if (!secret.trim()) {
    here('secret_file', `${path}: its first line is empty; it should hold the consumer secret`);
    return null;
  }
  return secret;
}
