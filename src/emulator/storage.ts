/**
 * Pre-signed download URLs on `/storage/` (wire-format.md, Face images): no token, an HMAC
 * signature over the path and `Expires=` (epoch seconds of the service clock), 403 once expired,
 * Range requests answered with 206. A URL names an immutable blob, so it stays tied to the file as
 * it was when listed (api-v2.md 4.4 Members 6, Sheets 6).
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Clock } from './clock.js';
import type { Company } from './company.js';
import type { Faults } from './faults.js';
import { bodyLength, sendBody, sliceBody, json, type Body } from './send.js';
import { URL_LIFETIME_MS } from './company.js';
import { extensionOf } from '../spec/extensions.js';

const CONTENT_TYPES: Record<string, string> = {
  jpg: 'image/jpeg', jpeg: 'image/jpeg', png: 'image/png', gif: 'image/gif', tif: 'image/tiff',
  pdf: 'application/pdf', txt: 'text/plain', csv: 'text/csv', xml: 'application/xml',
  htm: 'text/html', html: 'text/html', zip: 'application/zip', rtf: 'application/rtf',
  doc: 'application/msword', xls: 'application/vnd.ms-excel', ppt: 'application/vnd.ms-powerpoint',
  docx: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
  xlsx: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
  xlsm: 'application/vnd.ms-excel.sheet.macroEnabled.12',
  pptx: 'application/vnd.openxmlformats-officedocument.presentationml.presentation',
};

/** The id a CDN puts beside a signed URL's signature; one per emulator, like one key pair per distribution. */
const KEY_PAIR_ID = 'K2EMULATOR0WDS';

export class Storage {
  constructor(
    private readonly secret: Buffer,
    private readonly clock: Clock,
    private readonly companyByName: (name: string) => Company | undefined,
    private readonly faults: Faults,
  ) {}

  private sign(path: string, expires: number): string {
    return createHmac('sha256', this.secret).update(`${path}\n${expires}`).digest('base64url');
  }

  /** A download URL valid 15 minutes of service time; `deadline` is its expiry, epoch ms. */
  signUrl(baseUrl: string, company: Company, blobId: string, fileName: string): { url: string; deadline: number } {
    const expires = Math.floor((this.clock.now() + URL_LIFETIME_MS) / 1000);
    const path = `/storage/${encodeURIComponent(company.name)}/${blobId}/${encodeURIComponent(fileName)}`;
    const signature = this.sign(path, expires);
    // A CDN's signed URL, as the real service hands out: Expires, Signature, Key-Pair-Id
    // (wire-format.md, "Real-client facts"); the key pair id is not checked.
    return { url: `${baseUrl}${path}?Expires=${expires}&Signature=${signature}&Key-Pair-Id=${KEY_PAIR_ID}`, deadline: expires * 1000 };
  }

  async handle(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    const method = req.method ?? 'GET';
    const dateHeader = { Date: new Date(this.clock.now()).toUTCString() };
    const fail = (status: number, message: string): Promise<number> =>
      sendBody(res, status, { ...dateHeader, 'Content-Type': 'application/json' }, json({ errors: [message] }));

    const parts = url.pathname.split('/');
    const company = this.companyByName(decodeURIComponent(parts[2] ?? ''));
    if (company) company.stats.storage_downloads += 1;
    if (method !== 'GET' && method !== 'HEAD') {
      res.setHeader('Allow', 'GET, HEAD');
      await fail(405, `${method} is not allowed on storage`);
      return;
    }
    const latency = this.faults.latencyMs(method, url.pathname);
    if (latency) await new Promise((r) => setTimeout(r, latency));
    const fault = this.faults.decide(method, url.pathname);
    if (fault.kind === 'error') {
      await fail(fault.status, `storage error ${fault.status} (injected)`);
      return;
    }

    const expires = Number(url.searchParams.get('Expires'));
    const signature = url.searchParams.get('Signature') ?? '';
    const expected = Buffer.from(this.sign(url.pathname, expires));
    const given = Buffer.from(signature);
    if (!company || parts.length !== 5 || !Number.isInteger(expires) || given.length !== expected.length || !timingSafeEqual(given, expected)) {
      await fail(403, 'the signature of this download URL is not valid');
      return;
    }
    if (this.clock.now() >= expires * 1000) {
      await fail(403, 'this download URL has expired; list the files again for fresh URLs');
      return;
    }
    const blobId = parts[3]!;
    const entry = company.blobs.get(blobId);
    if (!entry) {
      await fail(404, 'the file of this download URL no longer exists');
      return;
    }
    // As parts: a generated file is sent as the slices it is made of (blobs.ts `readParts`).
    const data = company.blobs.readParts(blobId);
    const size = bodyLength(data);
    const fileName = decodeURIComponent(parts[4]!);
    const headers: Record<string, string | number> = {
      ...dateHeader,
      'Content-Type': CONTENT_TYPES[extensionOf(fileName)] ?? 'application/octet-stream',
      'Accept-Ranges': 'bytes',
      ETag: `"${blobId}"`,
      'Last-Modified': dateHeader.Date,
    };
    let status = 200;
    let body: Body = data;
    const range = req.headers.range;
    const ifRange = req.headers['if-range'];
    if (range && (!ifRange || ifRange === `"${blobId}"`)) {
      const parsed = parseRange(range, size);
      if (parsed === 'unsatisfiable') {
        await sendBody(res, 416, { ...headers, 'Content-Range': `bytes */${size}` }, Buffer.alloc(0));
        return;
      }
      if (parsed) {
        status = 206;
        body = sliceBody(data, parsed.start, parsed.end + 1);
        headers['Content-Range'] = `bytes ${parsed.start}-${parsed.end}/${size}`;
      }
    }
    const written = await sendBody(res, status, headers, body, {
      bandwidth: this.faults.bandwidth(method, url.pathname),
      fault,
      headOnly: method === 'HEAD',
    });
    company.stats.storage_bytes += written;
  }
}

/** One `bytes=` range; null for a header that is not one (answered whole, as RFC 9110 allows). */
function parseRange(header: string, size: number): { start: number; end: number } | 'unsatisfiable' | null {
  const m = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!m || (m[1] === '' && m[2] === '')) return null;
  let start: number;
  let end: number;
  if (m[1] === '') {
    const suffix = Number(m[2]);
    if (suffix === 0) return 'unsatisfiable';
    start = Math.max(0, size - suffix);
    end = size - 1;
  } else {
    start = Number(m[1]);
    end = m[2] === '' ? size - 1 : Math.min(Number(m[2]), size - 1);
  }
  if (start >= size || start > end) return 'unsatisfiable';
  return { start, end };
}
