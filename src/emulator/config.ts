/**
 * From command-line options or a config file (`--config FILE`, YAML or JSON) to the emulator's
 * configuration. One company by default (`demo-key` / `demo-secret`); a config file can hold
 * several, each with its own credentials, enabled operations, limits, task timing and seed.
 */
import { readFile, stat } from 'node:fs/promises';
import type { FileProblem } from '../util/yaml-places.js';
import { dirname, resolve } from 'node:path';
import { z } from 'zod';
import type { CompanySettings } from './company.js';
import type { EmulatorConfig } from './server.js';
import { Clock } from './clock.js';
import { DEFAULT_TASK_TIMING } from './tasks.js';
import { seedFromDirectory } from './seed.js';
import { seedGenerated, generateOptionsSchema, type GenerateOptions } from './generate.js';
import { OPERATIONS, type OperationId } from '../spec/operations.js';
import { describeIssues } from '../spec/schemas.js';
import { REQUESTS_PER_HOUR, TOKENS_PER_HOUR, UPDATE_REQUESTS_PER_MINUTE } from '../spec/limits.js';

export const DEFAULT_CONSUMER_KEY = 'demo-key';
export const DEFAULT_CONSUMER_SECRET = 'demo-secret';

const operationIds = OPERATIONS.map((o) => o.id) as [OperationId, ...OperationId[]];

const companySchema = z.strictObject({
  name: z.string().min(1).regex(/^[A-Za-z0-9._-]+$/, 'may hold only letters, digits, dot, dash and underscore'),
  consumer_key: z.string().min(1),
  consumer_secret: z.string().min(1),
  enabled_operations: z.union([z.literal('all'), z.array(z.enum(operationIds))]).default('all'),
  limits: z
    .strictObject({
      requests_per_hour: z.number().int().positive().default(REQUESTS_PER_HOUR),
      updates_per_minute: z.number().int().positive().default(UPDATE_REQUESTS_PER_MINUTE),
      tokens_per_hour: z.number().int().positive().default(TOKENS_PER_HOUR),
      /** The legacy interface's windows; 60 and 5 (api-v1-legacy.md 8) when absent. */
      legacy_requests_per_hour: z.number().int().positive().optional(),
      legacy_tokens_per_hour: z.number().int().positive().optional(),
    })
    .prefault({}),
  task_timing: z
    .strictObject({
      wait_ms: z.number().min(0).default(DEFAULT_TASK_TIMING.waitMs),
      run_ms: z.number().min(0).default(DEFAULT_TASK_TIMING.runMs),
      per_item_ms: z.number().min(0).default(DEFAULT_TASK_TIMING.perItemMs),
    })
    .prefault({}),
  maintenance: z.boolean().default(true),
  allow_http_webhooks: z.boolean().default(false),
  /** A seed folder (relative to the config file), or a generated company, or neither (empty). */
  seed: z.string().optional(),
  generate: generateOptionsSchema.optional(),
});

const configFileSchema = z.strictObject({
  companies: z.array(companySchema).min(1),
  clock: z
    .strictObject({
      start: z.string().optional(),
      speed: z.number().positive().optional(),
      time_zone: z.string().optional(),
    })
    .optional(),
});

export type CompanyFileConfig = z.infer<typeof companySchema>;

/** Options of `wds-files emulator` (DESIGN.md section 3) and of in-process starts. */
export interface EmulatorOptions {
  /** Seed folder; the sample company by default in the CLI. */
  seed?: string;
  /** A generated company instead of a seed folder. */
  generate?: GenerateOptions;
  clockSpeed?: number;
  /** Service time at start, `YYYY-MM-DD HH:MM:SS` in service local time. */
  clockStart?: string;
  timeZone?: string;
  stateDir?: string;
  /** A config file with several companies; the options above then only set the clock. */
  config?: string;
  allowHttpWebhooks?: boolean;
  maintenance?: boolean;
  consumerKey?: string;
  consumerSecret?: string;
  taskTiming?: Partial<typeof DEFAULT_TASK_TIMING>;
  limits?: Partial<CompanySettings['limits']>;
  enabledOperations?: OperationId[];
  verbose?: boolean;
  /** Real ms a request body may pause (`idleMs`) and take in all (`totalMs`) before the 408. */
  bodyTimeouts?: { idleMs?: number; totalMs?: number };
}

/** A config file that cannot be used, or an option the emulator cannot start with: the user's to mend. */
export class EmulatorConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'EmulatorConfigError';
  }
}

/** What is wrong with a clock of this time zone and start (service time), if anything. */
function clockProblem(timeZone: string | undefined, start: string | undefined): { field: 'time_zone' | 'start'; message: string } | null {
  let clock: Clock;
  try {
    clock = new Clock({ timeZone });
  } catch {
    return { field: 'time_zone', message: `"${timeZone}" is no time zone; give an IANA name such as Asia/Tokyo` };
  }
  try {
    if (start !== undefined) clock.parse(start);
  } catch {
    return { field: 'start', message: `"${start}" is no service time; write YYYY-MM-DD HH:MM:SS or YYYY-MM-DD, in the service's time zone` };
  }
  return null;
}

/** The rules between a config file's parts, which one part's schema cannot see. */
function crossChecks(config: z.infer<typeof configFileSchema>): { path: (string | number)[]; message: string }[] {
  const problems: { path: (string | number)[]; message: string }[] = [];
  const names = new Map<string, number>();
  const keys = new Map<string, number>();
  config.companies.forEach((c, i) => {
    if (c.seed !== undefined && c.generate) problems.push({ path: ['companies', i, 'generate'], message: `companies[${i}]: give either seed or generate, not both` });
    const sameName = names.get(c.name);
    if (sameName !== undefined) problems.push({ path: ['companies', i, 'name'], message: `companies[${i}].name: "${c.name}" names companies[${sameName}] already; each company needs a name of its own` });
    else names.set(c.name, i);
    // The consumer key picks the company a token is for: two alike would make one unreachable.
    const sameKey = keys.get(c.consumer_key);
    if (sameKey !== undefined) problems.push({ path: ['companies', i, 'consumer_key'], message: `companies[${i}].consumer_key: companies[${sameKey}] has this consumer key already; each company needs a key of its own` });
    else keys.set(c.consumer_key, i);
  });
  const clock = clockProblem(config.clock?.time_zone, config.clock?.start);
  if (clock) problems.push({ path: ['clock', clock.field], message: `clock.${clock.field}: ${clock.message}` });
  return problems;
}

function settingsFrom(c: CompanyFileConfig, baseDir: string): CompanySettings {
  let seed: CompanySettings['seed'] = () => undefined;
  if (c.seed) seed = seedFromDirectory(resolve(baseDir, c.seed));
  if (c.generate) seed = seedGenerated(c.generate);
  return {
    name: c.name,
    consumerKey: c.consumer_key,
    consumerSecret: c.consumer_secret,
    enabledOperations: c.enabled_operations === 'all' ? undefined : c.enabled_operations,
    limits: {
      requestsPerHour: c.limits.requests_per_hour,
      updatesPerMinute: c.limits.updates_per_minute,
      tokensPerHour: c.limits.tokens_per_hour,
      ...(c.limits.legacy_requests_per_hour ? { legacyRequestsPerHour: c.limits.legacy_requests_per_hour } : {}),
      ...(c.limits.legacy_tokens_per_hour ? { legacyTokensPerHour: c.limits.legacy_tokens_per_hour } : {}),
    },
    taskTiming: { waitMs: c.task_timing.wait_ms, runMs: c.task_timing.run_ms, perItemMs: c.task_timing.per_item_ms },
    maintenance: c.maintenance,
    allowHttpWebhooks: c.allow_http_webhooks,
    seed,
  };
}

export async function buildEmulatorConfig(options: EmulatorOptions): Promise<EmulatorConfig> {
  let companies: CompanySettings[];
  let fileClock: z.infer<typeof configFileSchema>['clock'];
  if (options.config) {
    const path = resolve(options.config);
    let text: string;
    try {
      text = await readFile(path, 'utf8');
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      throw new EmulatorConfigError(`cannot read the emulator config ${options.config}: ${code === 'ENOENT' ? 'no such file' : code === 'EISDIR' ? 'it is a folder' : (code ?? (error as Error).message)}`);
    }
    // The YAML reader loads only for a config file; the embedded emulator has none.
    const { checkYamlText, formatProblem } = await import('../util/yaml-places.js');
    const checked = checkYamlText(text, options.config, configFileSchema, 'an emulator config is a YAML mapping (companies:, clock:)', crossChecks);
    const refused = (problems: FileProblem[]): EmulatorConfigError =>
      new EmulatorConfigError(`the emulator config ${options.config} has ${problems.length} problem${problems.length === 1 ? '' : 's'}; the emulator did not start:\n${problems.map(formatProblem).join('\n')}`);
    if (!checked.value) throw refused(checked.problems);
    // A seed folder that is not there is named at its line, before any company loads.
    const missing: FileProblem[] = [];
    for (const [i, c] of checked.value.companies.entries()) {
      if (c.seed === undefined) continue;
      const dir = resolve(dirname(path), c.seed);
      const isFolder = await stat(dir).then((info) => info.isDirectory(), () => false);
      if (!isFolder) missing.push(checked.locate(['companies', i, 'seed'], `companies[${i}].seed: ${dir} is no folder; a seed is a folder with a company.json (as samples/company)`));
    }
    if (missing.length > 0) throw refused(missing);
    companies = checked.value.companies.map((c) => settingsFrom(c, dirname(path)));
    fileClock = checked.value.clock;
  } else {
    const parsed = companySchema.safeParse({
      name: 'default',
      consumer_key: options.consumerKey ?? DEFAULT_CONSUMER_KEY,
      consumer_secret: options.consumerSecret ?? DEFAULT_CONSUMER_SECRET,
      maintenance: options.maintenance ?? true,
      allow_http_webhooks: options.allowHttpWebhooks ?? false,
      enabled_operations: options.enabledOperations ?? 'all',
      limits: {
        ...(options.limits?.requestsPerHour ? { requests_per_hour: options.limits.requestsPerHour } : {}),
        ...(options.limits?.updatesPerMinute ? { updates_per_minute: options.limits.updatesPerMinute } : {}),
        ...(options.limits?.tokensPerHour ? { tokens_per_hour: options.limits.tokensPerHour } : {}),
        ...(options.limits?.legacyRequestsPerHour ? { legacy_requests_per_hour: options.limits.legacyRequestsPerHour } : {}),
        ...(options.limits?.legacyTokensPerHour ? { legacy_tokens_per_hour: options.limits.legacyTokensPerHour } : {}),
      },
      task_timing: {
        ...(options.taskTiming?.waitMs !== undefined ? { wait_ms: options.taskTiming.waitMs } : {}),
        ...(options.taskTiming?.runMs !== undefined ? { run_ms: options.taskTiming.runMs } : {}),
        ...(options.taskTiming?.perItemMs !== undefined ? { per_item_ms: options.taskTiming.perItemMs } : {}),
      },
      ...(options.generate ? { generate: options.generate } : {}),
      ...(options.seed && !options.generate ? { seed: resolve(options.seed) } : {}),
    });
    // The generated company's shape comes from the user's options (`--photo-bytes` and the like).
    if (!parsed.success) throw new EmulatorConfigError(`the emulator cannot start with these options:\n  ${describeIssues(parsed.error).join('\n  ')}`);
    companies = [settingsFrom(parsed.data, process.cwd())];
  }
  const timeZone = options.timeZone ?? fileClock?.time_zone;
  const startText = options.clockStart ?? fileClock?.start;
  const clock = clockProblem(timeZone, startText);
  if (clock) throw new EmulatorConfigError(`the emulator's clock: ${clock.message}`);
  const start = startText ? new Clock({ timeZone }).parse(startText) : undefined;
  return {
    companies,
    clock: { start, speed: options.clockSpeed ?? fileClock?.speed, timeZone },
    stateDir: options.stateDir,
    verbose: options.verbose,
    bodyTimeouts: options.bodyTimeouts,
  };
}
