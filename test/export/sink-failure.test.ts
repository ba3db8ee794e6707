/**
 * A failure of the sink while a body is coming (a full disk, say) ends the run, naming the file
 * and the cause: it is not the connection's fault, so it is not retried, and nothing more is
 * asked of storage. A writer that holds the body back (backpressure) gets every byte in order.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { createHash } from 'node:crypto';
import { Agent } from 'undici';
import { useEmulator } from '../helpers/emulator.js';
import { clientFor } from '../helpers/client.js';
import { state } from '../helpers/export.js';
import { UrlLister, attachmentTargets } from '../../src/stages/export/list-urls.js';
import { SinkError, downloadFile } from '../../src/stages/export/download.js';
import { DEFAULT_RETRY } from '../../src/client/retry.js';
import type { EntryWriter, ExportSink } from '../../src/sinks/sink.js';
import type { WdsClient } from '../../src/index.js';

const emu = useEmulator({ generate: { members: 1, photo_ratio: 0, attachments_per_member: [1, 1], attachment_bytes: [3_000_000, 3_000_000] } });
let client: WdsClient | undefined;
afterAll(async () => {
  await client?.close();
});

/** A sink whose writer is `write`, and that remembers what it was asked. */
function sinkWith(write: (chunk: Buffer) => Promise<void> | undefined): { sink: ExportSink; calls: string[] } {
  const calls: string[] = [];
  let size = 0;
  const writer: EntryWriter = {
    write: (chunk) => {
      size += chunk.length;
      return write(chunk);
    },
    restart: async () => void calls.push('restart'),
    commit: async () => {
      calls.push('commit');
      return { sha256: '', size };
    },
    abort: async () => void calls.push('abort'),
  };
  const sink: ExportSink = {
    target: 'test', intactFromEarlierRun: async () => new Map(), keep: async () => [], record: async () => undefined, finish: async () => undefined, pause: async () => undefined, abort: async () => undefined, letGo: async () => undefined,
    open: async () => {
      calls.push('open');
      return writer;
    },
  };
  return { sink, calls };
}

async function theFile(): Promise<{ lister: UrlLister; file: Awaited<ReturnType<UrlLister['listAll']>>[number] }> {
  client ??= clientFor(emu());
  const lister = new UrlLister(client, await attachmentTargets(client));
  const [file] = await lister.listAll();
  return { lister, file: file! };
}

describe('the sink while a body comes', () => {
  it('a write that fails ends the download with a SinkError naming the file, drops the writer; no retry', async () => {
    const { lister, file } = await theFile();
    let received = 0;
    const { sink, calls } = sinkWith((chunk) => {
      received += chunk.length;
      return received > 1_000_000 ? Promise.reject(new Error('ENOSPC: no space left on device, write')) : undefined;
    });
    await emu().control('POST', '/stats/reset');
    const dispatcher = new Agent({ connections: 1 });
    try {
      const run = downloadFile({ file, path: 'attachments/a.pdf' }, { dispatcher, lister, sink, retry: DEFAULT_RETRY });
      await expect(run).rejects.toBeInstanceOf(SinkError);
      await expect(run).rejects.toThrow('cannot write attachments/a.pdf: ENOSPC: no space left on device');
    } finally {
      await dispatcher.close();
    }
    // The writer is dropped (its file closed and removed), and the file is not started again.
    expect(calls).toEqual(['open', 'abort']);
    expect((await emu().control('GET', '/stats')).storage_downloads).toBe(1);
  });

  it('a writer that makes the body wait gets every byte, in order', async () => {
    const { lister, file } = await theFile();
    const hash = createHash('sha256');
    let writes = 0;
    let waiting = false;
    let earlyWrites = 0;
    const { sink, calls } = sinkWith((chunk) => {
      if (waiting) earlyWrites += 1;
      hash.update(chunk);
      writes += 1;
      if (writes % 3 !== 0) return undefined;
      // Every third chunk waits a little, as a disk behind its batches would: no bytes come meanwhile.
      waiting = true;
      return new Promise((resolve) => setTimeout(() => {
        waiting = false;
        resolve();
      }, 2));
    });
    const dispatcher = new Agent({ connections: 1 });
    try {
      const result = await downloadFile({ file, path: 'attachments/a.pdf' }, { dispatcher, lister, sink, retry: DEFAULT_RETRY });
      expect(result.outcome).toBe('ok');
    } finally {
      await dispatcher.close();
    }
    expect(calls).toEqual(['open', 'commit']);
    expect(writes).toBeGreaterThan(6);
    expect(earlyWrites).toBe(0);
    const want = (await state(emu())).attachments[0]!;
    expect(hash.digest('hex')).toBe(want.sha256);
  });
});
