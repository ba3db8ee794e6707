/**
 * The control API of DESIGN.md section 6, outside `/api`: clock, faults, state, stats, reset, and
 * the webhook delivery log. `?company=NAME` picks a company; the first one by default.
 */
import { codesOf, peekEntry, sortedCodes } from './lazy-record.js';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ControlledEmulator } from './host.js';
import type { Company } from './company.js';
import { faultsBodySchema } from './faults.js';
import { sendBody, json } from './send.js';
import { describeIssues } from '../spec/schemas.js';
import { z } from 'zod';

const clockBodySchema = z.strictObject({
  advance_seconds: z.number().min(0).optional(),
  speed: z.number().positive().optional(),
  /** Sets the service time: `YYYY-MM-DD HH:MM:SS` in service local time. */
  now: z.string().optional(),
});

export async function handleControl(emulator: ControlledEmulator, req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
  const reply = (status: number, body: unknown): Promise<number> =>
    sendBody(res, status, { 'Content-Type': 'application/json' }, json(body));
  const method = req.method ?? 'GET';
  const route = `${method} ${url.pathname.replace(/\/+$/, '')}`;
  const company = emulator.company(url.searchParams.get('company'));
  if (!company) return void (await reply(404, { errors: [`no company named "${url.searchParams.get('company')}"`] }));

  let body: unknown = undefined;
  if (method === 'POST') {
    const chunks: Buffer[] = [];
    for await (const chunk of req as AsyncIterable<Buffer>) chunks.push(chunk);
    const text = Buffer.concat(chunks).toString('utf8').trim();
    try {
      body = text ? (JSON.parse(text) as unknown) : {};
    } catch {
      return void (await reply(400, { errors: ['the body is not valid JSON'] }));
    }
  }

  switch (route) {
    case 'GET /_emulator/clock':
      return void (await reply(200, clockView(emulator)));
    case 'POST /_emulator/clock': {
      const parsed = clockBodySchema.safeParse(body);
      if (!parsed.success) return void (await reply(400, { errors: describeIssues(parsed.error) }));
      if (parsed.data.now !== undefined) {
        try {
          emulator.clock.set(emulator.clock.parse(parsed.data.now));
        } catch (error) {
          return void (await reply(400, { errors: [(error as Error).message] }));
        }
      }
      if (parsed.data.advance_seconds !== undefined) emulator.clock.advance(parsed.data.advance_seconds);
      if (parsed.data.speed !== undefined) emulator.clock.setSpeed(parsed.data.speed);
      for (const c of emulator.companies) await c.tasks.tick();
      return void (await reply(200, clockView(emulator)));
    }
    case 'GET /_emulator/faults':
      return void (await reply(200, { api: emulator.apiFaults.current, storage: emulator.storageFaults.current }));
    case 'POST /_emulator/faults': {
      const parsed = faultsBodySchema.safeParse(body);
      if (!parsed.success) return void (await reply(400, { errors: describeIssues(parsed.error) }));
      emulator.apiFaults.configure(parsed.data.api);
      emulator.storageFaults.configure(parsed.data.storage);
      return void (await reply(200, { api: emulator.apiFaults.current, storage: emulator.storageFaults.current }));
    }
    case 'DELETE /_emulator/faults':
      emulator.apiFaults.clear();
      emulator.storageFaults.clear();
      return void (await reply(200, { api: {}, storage: {} }));
    case 'GET /_emulator/state':
      await company.tasks.tick();
      return void (await reply(200, stateView(company)));
    case 'GET /_emulator/stats':
      return void (await reply(200, company.stats.toJSON()));
    case 'POST /_emulator/stats/reset':
      company.stats.reset();
      return void (await reply(200, company.stats.toJSON()));
    case 'POST /_emulator/reset':
      for (const c of url.searchParams.get('company') ? [company] : emulator.companies) {
        emulator.tokens.forget(c);
        emulator.legacy.forget(c);
        await c.reset();
        c.changed();
      }
      emulator.apiFaults.clear();
      emulator.storageFaults.clear();
      return void (await reply(200, { reset: true }));
    case 'GET /_emulator/tasks/drain':
      await company.tasks.drain();
      return void (await reply(200, { drained: true }));
    case 'GET /_emulator/webhooks':
      return void (await reply(200, { deliveries: emulator.webhooks.log }));
    case 'GET /_emulator/companies':
      return void (await reply(200, {
        companies: emulator.companies.map((c) => ({ name: c.name, consumer_key: c.settings.consumerKey })),
      }));
    default:
      return void (await reply(404, { errors: [`no control endpoint ${route}`] }));
  }
}

function clockView(emulator: ControlledEmulator): { now: string; speed: number; epoch_ms: number; time_zone: string } {
  return {
    now: emulator.clock.format(),
    speed: emulator.clock.speed,
    epoch_ms: Math.floor(emulator.clock.now()),
    time_zone: emulator.clock.timeZone,
  };
}

/**
 * Every photo and attachment with size and sha256, for checking a run against the truth.
 * `record_index` counts the member's records that hold a file in that field, in record order: the
 * order in which the attachment listing shows them (api-v2.md 4.4 Sheets 6).
 */
export function stateView(company: Company): {
  members: { code: string; photo: { file_name: string; size: number; sha256: string; updated_at: string } | null }[];
  attachments: { sheet_id: number; custom_field_id: number; code: string; record_index: number; file_name: string; size: number; sha256: string; updated_at: string }[];
} {
  const { data, blobs } = company;
  // Read through peekEntry: a generated company makes its entries for this answer and keeps none.
  const members = [...codesOf(data.members)]
    .sort((a, b) => a.localeCompare(b))
    .map((code) => {
      const photo = peekEntry(data.photos, code);
      return {
        code,
        photo: photo ? { file_name: photo.file_name, size: photo.size, sha256: blobs.sha256(photo.blob), updated_at: photo.updated_at } : null,
      };
    });
  const attachments = [];
  for (const sheet of Object.values(data.sheets).sort((a, b) => a.def.id - b.def.id)) {
    for (const field of sheet.def.fields.filter((f) => f.kind === 'attach_file')) {
      for (const code of sortedCodes(sheet.records)) {
        let index = 0;
        for (const record of peekEntry(sheet.records, code)!) {
          const file = record.files[String(field.id)];
          if (!file) continue;
          attachments.push({
            sheet_id: sheet.def.id, custom_field_id: field.id, code, record_index: index,
            file_name: file.file_name, size: file.size, sha256: blobs.sha256(file.blob), updated_at: file.updated_at,
          });
          index += 1;
        }
      }
    }
  }
  return { members, attachments };
}
