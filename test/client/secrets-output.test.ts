/**
 * Secrets in answers (DESIGN.md section 8): a webhook's `secret_token` and a `password` are masked
 * in every output, report and log line, unless `wds-files api --show-secrets`. The webhook is
 * registered through the CLI itself; the secret has spaces and a quote, so a mask that stops at
 * the first space or quote would leave part of it.
 */
import { describe, expect, it } from 'vitest';
import { useEmulator } from '../helpers/emulator.js';
import { connectionArgs, runCli, type CliRun } from '../helpers/cli-process.js';
import { REDACTED, forgetSecret, redact, redactValue, registerSecret } from '../../src/util/redact.js';
import { RunReport } from '../../src/stages/report.js';

const emu = useEmulator({ limits: { updatesPerMinute: 10_000 } });
const SECRET = 'whsec 7f3a "quoted" part 9c21';
const PARTS = ['whsec', '7f3a', 'quoted', '9c21'];

const api = (...args: string[]): Promise<CliRun> => runCli(['api', ...args, ...connectionArgs(emu())]);

function expectNoSecret(run: CliRun): void {
  const text = `${run.stdout}\n${run.stderr}`;
  for (const part of PARTS) expect(text).not.toContain(part);
}

describe('secret_token in the answers of wds-files api', () => {
  it('is masked when registered, listed and listed with --json, and shown with --show-secrets', async () => {
    const hook = { url: 'https://hooks.example.invalid/wds', events: ['member_created'], secret_token: SECRET };
    const registered = await api('POST', '/webhook', '--data', JSON.stringify(hook));
    expect(registered.code, registered.stderr).toBe(0);
    expectNoSecret(registered);
    expect(JSON.parse(registered.stdout)).toMatchObject({ url: hook.url, secret_token: REDACTED });

    // The service holds it and answers it: only the CLI's output masks it.
    const truth = await emu().api('GET', '/webhook');
    expect(JSON.stringify(truth.body)).toContain(JSON.stringify(SECRET));

    for (const extra of [[], ['--json']]) {
      const listed = await api('GET', '/webhook', ...extra);
      expect(listed.code, listed.stderr).toBe(0);
      expectNoSecret(listed);
      const answer = JSON.parse(listed.stdout) as { webhook_data: { url: string; secret_token: string | null }[] };
      expect(answer.webhook_data.find((h) => h.url === hook.url)!.secret_token).toBe(REDACTED);
    }

    const shown = await api('GET', '/webhook', '--show-secrets');
    expect(shown.code, shown.stderr).toBe(0);
    const answer = JSON.parse(shown.stdout) as { webhook_data: { url: string; secret_token: string | null }[] };
    expect(answer.webhook_data.find((h) => h.url === hook.url)!.secret_token).toBe(SECRET);
    // --show-secrets opens the answer only: what goes to stderr stays masked.
    for (const part of PARTS) expect(shown.stderr).not.toContain(part);
  }, 60_000);
});

describe('secret fields in text and reports', () => {
  it('masks a quoted secret whole, JSON-escaped or not, and leaves null, booleans and look-alike keys', () => {
    const answer = JSON.stringify({ secret_token: SECRET, password: 'hunter two', password_locked: false, url: 'http://x' });
    const once = redact(`the service answered ${answer}`);
    const twice = redact(JSON.stringify({ message: `answered ${answer}` }));
    for (const text of [once, twice]) for (const part of [...PARTS, 'hunter', 'two']) expect(text).not.toContain(part);
    expect(once).toContain('"password_locked":false');
    expect(once).toContain('"url":"http://x"');
    // Other test files of this process may have registered a word of these names as a secret
    // value (a test's password "secret"): what is checked is the value, not the key.
    expect(redact('{"secret_token": null}')).toMatch(/_token": null}$/);
    expect(redact('password=hunter2&grant_type=client_credentials')).toContain(`=${REDACTED}&grant_type=client_credentials`);
  });

  it('masks a secret field even when a word of its name is itself a registered secret', () => {
    // A consumer secret may be any string; one that is a word of a field's name once made the
    // field unrecognisable ("[REDACTED]_token") and left its value in the text.
    for (const word of ['secret', 'token', 'password']) {
      // A word another test file of this process registered stays registered after this test.
      const before = redact(word) === REDACTED;
      registerSecret(word);
      try {
        const text = redact(`the service answered {"secret_token":${JSON.stringify(SECRET)},"password":"hunter two"}`);
        for (const part of [...PARTS, 'hunter']) expect(text, word).not.toContain(part);
        const reason = JSON.stringify(redactValue({ reason: `said {"secret_token":${JSON.stringify(SECRET)}}` }));
        for (const part of PARTS) expect(reason, word).not.toContain(part);
      } finally {
        if (!before) forgetSecret(word);
      }
    }
  });

  it('a report written with --report or --json holds no secret from a reason', () => {
    const report = new RunReport('attachments import');
    report.add({ key: 'k', code: 'A0001', file_name: 'a.pdf', outcome: 'failed', reason: `the service said {"secret_token":"${SECRET.replace(/"/g, '\\"')}","password":"hunter two"}` });
    const written = JSON.stringify(redactValue(report.toJSON({})));
    const summary = JSON.stringify(redactValue(report.summary({})));
    for (const text of [written, summary]) for (const part of [...PARTS, 'hunter']) expect(text).not.toContain(part);
    expect(written).toContain(REDACTED);
  });
});
