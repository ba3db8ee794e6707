/**
 * `wds-files emulator`: the local emulator of the service as a server (DESIGN.md sections 3, 6).
 * Prints its address and credentials, then serves until interrupted.
 */
import type { Argv } from 'yargs';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { SAMPLE_COMPANY_DIR } from '../paths.js';
import { UsageError } from '../connection.js';
import { leafCommand } from '../help-text.js';
import type { GenerateOptions } from '../../emulator/generate.js';

interface EmulatorArgs {
  port: number;
  host: string;
  seed?: string;
  generate?: number;
  files: boolean;
  'photo-bytes'?: string;
  'photo-ratio'?: number;
  'attachments-per-member'?: string;
  'attachment-bytes'?: string;
  'clock-speed'?: number;
  'clock-start'?: string;
  timezone?: string;
  'state-dir'?: string;
  config?: string;
  'allow-http-webhooks': boolean;
  maintenance: boolean;
  json: boolean;
}

/**
 * The process's parent as the CLI started: read later, after the banner, npm's shell may already
 * have died (a SIGTERM to npm as soon as the banner showed), and the orphan would take its new
 * parent for the one to watch and never stop.
 */
const PARENT_AT_START = process.ppid;

export const emulatorCommand = leafCommand<EmulatorArgs>({
  command: 'emulator',
  describe: 'Run the local emulator of the Workforce Data Service',
  builder: (yargs: Argv) =>
    yargs
      .option('port', { type: 'number', default: 8787, describe: 'Port to listen on (0 for any free port)' })
      .option('host', { type: 'string', default: '127.0.0.1', describe: 'Address to listen on' })
      .option('seed', { type: 'string', describe: 'Seed folder of the company (default: the sample company)' })
      .option('generate', { type: 'number', describe: 'Generate a synthetic company of N members instead of a seed' })
      .option('files', { type: 'boolean', default: true, describe: 'With --generate: photos and attachments (--no-files for none)' })
      .option('photo-bytes', { type: 'string', describe: 'With --generate: photo sizes in bytes, N or MIN-MAX (default 20000-500000)' })
      .option('photo-ratio', { type: 'number', describe: 'With --generate: share of members with a photo, 0 to 1 (default 0.9)' })
      .option('attachments-per-member', { type: 'string', describe: 'With --generate: attachments per member, N or MIN-MAX (default 1-3)' })
      .option('attachment-bytes', { type: 'string', describe: 'With --generate: attachment sizes in bytes, N or MIN-MAX (default 5000-200000)' })
      .option('clock-speed', { type: 'number', describe: 'Service seconds per real second (default 1)' })
      .option('clock-start', { type: 'string', describe: 'Service time at start, "YYYY-MM-DD HH:MM:SS" (default: now)' })
      .option('timezone', { type: 'string', describe: 'IANA time zone of service local time (default Asia/Tokyo)' })
      .option('state-dir', { type: 'string', describe: 'Keep data and files in DIR across restarts' })
      .option('config', { type: 'string', describe: 'YAML or JSON config with several companies' })
      .option('allow-http-webhooks', { type: 'boolean', default: false, describe: 'Let webhook settings use http://127.0.0.1 or localhost' })
      .option('maintenance', { type: 'boolean', default: true, describe: 'Answer 503 from 01:00 to 01:30 service time (--no-maintenance to switch off)' })
      .option('json', { type: 'boolean', default: false, describe: 'Print the address and credentials as one JSON line' })
      .check((argv) => {
        if (argv.generate !== undefined && (!Number.isInteger(argv.generate) || argv.generate < 0)) {
          throw new Error(`--generate takes a whole number of members, got ${argv.generate}`);
        }
        if (argv.generate !== undefined && argv.seed) throw new Error('give either --seed or --generate, not both');
        for (const name of SHAPE_OPTIONS) {
          if (argv[name] === undefined) continue;
          if (argv.generate === undefined) throw new Error(`--${name} shapes a generated company: give it with --generate N`);
          if (name !== 'photo-ratio') wholeRange(name, argv[name] as string);
        }
        if (argv['clock-speed'] !== undefined && !(argv['clock-speed'] > 0)) {
          throw new Error(`--clock-speed must be a positive number, got ${argv['clock-speed']}`);
        }
        if (!Number.isInteger(argv.port) || argv.port < 0 || argv.port > 65535) throw new Error(`--port must be 0 to 65535, got ${argv.port}`);
        return true;
      }) as Argv<EmulatorArgs>,
  handler: async (argv) => {
    const { startEmulator, DEFAULT_CONSUMER_KEY, DEFAULT_CONSUMER_SECRET, EmulatorConfigError, SeedError } = await import('../../emulator/index.js');
    const running = await startEmulator({
      port: argv.port,
      host: argv.host,
      seed: argv.generate === undefined ? resolve(argv.seed ?? SAMPLE_COMPANY_DIR) : undefined,
      generate: argv.generate === undefined ? undefined : generateOptions(argv, argv.generate),
      clockSpeed: argv['clock-speed'],
      clockStart: argv['clock-start'],
      timeZone: argv.timezone,
      stateDir: argv['state-dir'],
      config: argv.config,
      allowHttpWebhooks: argv['allow-http-webhooks'],
      maintenance: argv.maintenance,
    }).catch((error: unknown) => {
      // A config file or seed folder to mend is the user's input, as a bad option is: exit 2.
      throw error instanceof EmulatorConfigError || error instanceof SeedError ? new UsageError(error.message) : error;
    });
    const companies = running.emulator.companies.map((c) => ({ name: c.name, consumer_key: c.settings.consumerKey, consumer_secret: c.settings.consumerSecret }));
    if (argv.json) {
      console.log(JSON.stringify({ base_url: running.url, api: `${running.url}/api/v2.0`, legacy_api: `${running.url}/api/v1.2`, companies }));
    } else {
      console.log(`Workforce Data Service emulator listening on ${running.url}`);
      // The exact option to copy: the API's own address works too, but this is the one to give.
      console.log(`  use:      --base-url ${running.url}   (or WDS_BASE_URL=${running.url})`);
      console.log(`  API:      ${running.url}/api/v2.0`);
      console.log(`  legacy:   ${running.url}/api/v1.2 (also v1.0, v1.1; POST with X-SERVICE-TOKEN)`);
      console.log(`  control:  ${running.url}/_emulator/{clock,faults,state,stats,reset}`);
      console.log(`  clock:    ${running.emulator.clock.format()} (${running.emulator.clock.timeZone}, speed ${running.emulator.clock.speed})`);
      for (const c of companies) {
        const isDefault = c.consumer_key === DEFAULT_CONSUMER_KEY && c.consumer_secret === DEFAULT_CONSUMER_SECRET;
        // The demo credentials are public; a config file's secrets are not printed.
        console.log(`  company ${c.name}: consumer key ${c.consumer_key}${isDefault ? `, consumer secret ${c.consumer_secret}` : ''}`);
      }
      console.log('Press Ctrl-C to stop.');
    }
    await new Promise<void>((resolveStop) => {
      const stop = (): void => resolveStop();
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
      stopWhenNpmGoes(stop);
    });
    await running.close();
  },
}, {
  examples: [
    ['wds-files emulator', 'the sample company on http://127.0.0.1:8787; prints the --base-url and credentials to use'],
    ['wds-files emulator --generate 2000 --clock-speed 60', 'a synthetic company of 2,000 members, a service minute per real second'],
    ['wds-files emulator --generate 200000 --photo-ratio 1 --photo-bytes 8192 --attachments-per-member 0', '200,000 photos of 8 KB, made on each download'],
    ['wds-files emulator --config companies.yaml --state-dir .emulator-state', 'several companies, kept across restarts'],
  ],
  exits: { 0: 'stopped by Ctrl-C or SIGTERM', 1: 'it could not start (the port is taken, say)', 2: 'a bad option, config file or seed folder (each problem at its line)' },
  env: [],
});

const SHAPE_OPTIONS = ['photo-bytes', 'photo-ratio', 'attachments-per-member', 'attachment-bytes'] as const;

/** `N` or `MIN-MAX` of whole numbers, as [min, max]; the emulator checks the bounds of each. */
function wholeRange(name: string, text: string): [number, number] {
  const match = /^\s*(\d+)\s*(?:-\s*(\d+)\s*)?$/.exec(String(text));
  if (!match) throw new Error(`--${name} takes a whole number N or a range MIN-MAX, got "${text}"`);
  const min = Number(match[1]);
  return [min, match[2] === undefined ? min : Number(match[2])];
}

/** The generated company's shape from the options: the emulator's defaults for those left out. */
function generateOptions(argv: EmulatorArgs, members: number): GenerateOptions {
  return {
    members,
    files: argv.files,
    ...(argv['photo-bytes'] === undefined ? {} : { photo_bytes: wholeRange('photo-bytes', argv['photo-bytes']) }),
    ...(argv['photo-ratio'] === undefined ? {} : { photo_ratio: argv['photo-ratio'] }),
    ...(argv['attachments-per-member'] === undefined ? {} : { attachments_per_member: wholeRange('attachments-per-member', argv['attachments-per-member']) }),
    ...(argv['attachment-bytes'] === undefined ? {} : { attachment_bytes: wholeRange('attachment-bytes', argv['attachment-bytes']) }),
  };
}

/**
 * Under `npm run`, a SIGTERM to npm reaches only the shell npm runs the script in, and the shell
 * dies without passing it on: the emulator would keep the port. So, started by npm, it stops when
 * it is orphaned (its parent changes), or when its shell is (npm died at once, before it could
 * pass the signal on to the shell: it only can once its handler is in place). Started any other
 * way (systemd, nohup) it is left alone.
 */
function stopWhenNpmGoes(stop: () => void): void {
  const event = process.env.npm_lifecycle_event;
  if (!event) return;
  const parent = PARENT_AT_START;
  const shell = ranByNpm(parent, event);
  const npm = shell ? parentOf(parent) : null;
  // Where /proc cannot tell, a parent of 1 (init) is taken as the sign.
  if (leftAlready(parent, shell, npm) ?? parent === 1) {
    stop();
    return;
  }
  const timer = setInterval(() => {
    if (process.ppid === parent && (npm === null || parentOf(parent) === npm)) return;
    clearInterval(timer);
    stop();
  }, 500);
  timer.unref();
}

/**
 * Whether npm had already gone when this process read its parent (npm signalled while the CLI was
 * loading). Then whoever adopted the orphan (the CLI, or its shell) is taken for npm's process:
 * init, or a subreaper such as a CI runner's, which is not pid 1 and never goes away. npm, its
 * shell and the CLI share a process group; whoever adopts an orphan is of another (npm may be pid 1
 * itself, in a container). Null where /proc cannot tell.
 */
function leftAlready(parent: number, shell: boolean | null, npm: number | null): boolean | null {
  const group = processGroupOf('self');
  if (group === null || shell === null) return null;
  // Not npm's shell: npm itself (its shell execs the CLI, and npm passes signals on itself), or a subreaper.
  if (!shell) return processGroupOf(String(parent)) !== group;
  return npm === null || processGroupOf(String(npm)) !== group;
}

/**
 * Whether process `pid` was started by npm for the script `event`, as npm's shell was: its
 * environment names the script. Null where /proc cannot tell (not Linux, or the process is gone).
 */
function ranByNpm(pid: number, event: string): boolean | null {
  try {
    return readFileSync(`/proc/${pid}/environ`, 'latin1').split('\0').includes(`npm_lifecycle_event=${event}`);
  } catch {
    return null;
  }
}

/** Field `at` of /proc/PID/stat after the command name (which is in parentheses and may hold spaces); null once the process is gone. */
function statField(pid: string, at: number): number | null {
  try {
    return Number(readFileSync(`/proc/${pid}/stat`, 'latin1').replace(/^.*\) /s, '').split(' ')[at]);
  } catch {
    return null;
  }
}

/** The parent of process `pid`; null once it is gone. */
const parentOf = (pid: number): number | null => statField(String(pid), 1);

/** The process group of process `pid` ('self' for this one); null where /proc cannot tell. */
const processGroupOf = (pid: string): number | null => statField(pid, 2);
