/**
 * companies.yaml (DESIGN.md section 14): the secret from a variable or a file and never from the
 * file itself, `${COMPANY}` in pipeline files, and every problem printed at its line with the
 * company and the rule, local-disk targets refused with the reason.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CompaniesFileError, loadCompanies } from '../../src/fleet/companies.js';
import { tempDir } from '../helpers/export.js';

const ARCHIVE = 'name: nightly\nschedule: "0 4 * * *"\nfrom: { service: attachments }\nto: { archive: "s3://backups/${COMPANY}/attachments" }\n';

async function folderWith(files: Record<string, string>): Promise<string> {
  const dir = tempDir('wds-companies-');
  for (const [name, text] of Object.entries(files)) await writeFile(join(dir, name), text);
  return dir;
}

async function problemsOf(file: string, env: NodeJS.ProcessEnv = {}): Promise<string[]> {
  const error = await loadCompanies(file, env).then(() => null, (caught: unknown) => caught);
  expect(error).toBeInstanceOf(CompaniesFileError);
  return (error as CompaniesFileError).problems.map((p) => `${p.file.split('/').at(-1)}:${p.line}:${p.column}: ${p.message}`);
}

describe('companies.yaml', () => {
  it('reads each company, its secret from ${VAR} or secret_file, and its pipelines with ${COMPANY} filled in', async () => {
    const dir = await folderWith({
      'nightly.yaml': ARCHIVE,
      'beta.secret': 'beta-secret-value\n',
      'companies.yaml': [
        'companies:',
        '  - name: acme',
        '    base_url: https://acme.example.com',
        '    consumer_key: acme-key',
        '    consumer_secret: ${ACME_SECRET}',
        '    pipelines: [nightly.yaml]',
        '  - name: beta',
        '    base_url: https://beta.example.com',
        '    consumer_key: beta-key',
        '    secret_file: beta.secret',
        '    pipelines: [nightly.yaml]',
      ].join('\n'),
    });
    const companies = await loadCompanies(join(dir, 'companies.yaml'), { ACME_SECRET: 'acme-secret-value' });
    expect(companies.map((c) => [c.name, c.consumerSecret])).toEqual([['acme', 'acme-secret-value'], ['beta', 'beta-secret-value']]);
    const beta = companies[1]!.pipelines.get('nightly')!;
    expect(beta.to).toMatchObject({ archive: 's3://backups/beta/attachments' });
    expect(beta.connection).toEqual({ base_url: 'https://beta.example.com', consumer_key: 'beta-key', consumer_secret: 'beta-secret-value' });
    expect(beta.schedule).toEqual({ cron: '0 4 * * *', catch_up: 'once' });
  });

  it('refuses a secret written in the file, an unset variable, a duplicate name and a bad base URL, naming the line, the company and the rule', async () => {
    const dir = await folderWith({
      'nightly.yaml': ARCHIVE,
      'companies.yaml': [
        'companies:',
        '  - name: acme',
        '    base_url: https://acme.example.com',
        '    consumer_key: acme-key',
        '    consumer_secret: plain-secret-in-file',
        '    pipelines: [nightly.yaml]',
        '  - name: acme',
        '    base_url: https://other.example.com',
        '    consumer_key: other-key',
        '    consumer_secret: ${OTHER_SECRET}',
        '    pipelines: [nightly.yaml]',
      ].join('\n'),
    });
    const problems = await problemsOf(join(dir, 'companies.yaml'));
    expect(problems).toEqual([
      expect.stringMatching(/^companies\.yaml:5:\d+: company acme: write \$\{VARIABLE\}.*never holds a secret itself$/),
      expect.stringMatching(/^companies\.yaml:7:\d+: company acme: the name is taken by companies\[0\]/),
      'companies.yaml:10:22: the variable OTHER_SECRET is not set, and ${OTHER_SECRET} has no default (write ${OTHER_SECRET:-default} for one)',
    ]);
    expect(problems.join('\n')).not.toContain('plain-secret-in-file');

    const bad = await folderWith({
      'nightly.yaml': ARCHIVE,
      'companies.yaml': 'companies:\n  - name: gamma\n    base_url: ftp://gamma\n    consumer_key: g\n    consumer_secret: ${G}\n    pipelines: [nightly.yaml]\n    color: red\n',
    });
    expect(await problemsOf(join(bad, 'companies.yaml'), { G: 'gamma-secret' })).toEqual([
      'companies.yaml:3:15: company gamma: base_url: must be an http(s) URL such as https://example.com',
      'companies.yaml:7:5: company gamma: unknown key "color"',
    ]);
  });

  it('refuses a pipeline whose target is on this machine\'s disk, with the reason, at the pipeline file\'s line', async () => {
    const dir = await folderWith({
      'to-folder.yaml': 'name: photos\nfrom: { service: photos }\nto: { archive: "../out/${COMPANY}/photos" }\n',
      'companies.yaml': 'companies:\n  - name: acme\n    base_url: https://acme.example.com\n    consumer_key: k\n    consumer_secret: ${S}\n    pipelines: [to-folder.yaml]\n',
    });
    const problems = await problemsOf(join(dir, 'companies.yaml'), { S: 'acme-secret' });
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(/^to-folder\.yaml:3:5: to\.archive \/.*\/out\/acme\/photos is on this machine's disk: a fleet run may be taken over by a worker on another machine.*\(company acme\)$/);
  });
});
