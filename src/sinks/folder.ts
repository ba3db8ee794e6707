/**
 * The folder sink: every file is written under a temporary name in `.wds-tmp/` and renamed into
 * place when complete, so a killed run leaves no half file; the manifest grows by one line per
 * file as it lands, so a rerun knows what is already there, and is rewritten in order at the end.
 */
import { createHash, randomBytes } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { appendFile, mkdir, open, readFile, rename, rm, stat, writeFile, type FileHandle } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { EntryWriter, ExportSink } from './sink.js';
import { MANIFEST_NAME, formatLine, parseManifest, sortLines, manifestKey, type ManifestLine } from './manifest.js';

const TMP = '.wds-tmp';

export async function sha256File(path: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path, { highWaterMark: 1 << 20 })) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

export class FolderSink implements ExportSink {
  private readonly lines = new Map<string, ManifestLine>();
  private appending: Promise<void> = Promise.resolve();
  private counter = 0;
  private readonly madeDirs = new Set<string>();

  private constructor(readonly target: string) {}

  /** Opens (creates) the folder and sweeps temporary files a killed run left behind. */
  static async create(dir: string): Promise<FolderSink> {
    const sink = new FolderSink(dir);
    await mkdir(dir, { recursive: true });
    await rm(join(dir, TMP), { recursive: true, force: true });
    await mkdir(join(dir, TMP));
    return sink;
  }

  async intactFromEarlierRun(): Promise<Map<string, ManifestLine>> {
    let text = '';
    try {
      text = await readFile(join(this.target, MANIFEST_NAME), 'utf8');
    } catch {
      return new Map();
    }
    const intact = new Map<string, ManifestLine>();
    for (const [key, line] of parseManifest(text).lines) {
      const path = join(this.target, line.path);
      try {
        const info = await stat(path);
        if (info.size !== line.size) continue;
        if ((await sha256File(path)) !== line.sha256) continue;
      } catch {
        continue;
      }
      intact.set(key, line);
      // Files kept from the earlier run stay in the manifest even if this run lists them no more.
      this.lines.set(key, line);
    }
    return intact;
  }

  async open(path: string): Promise<EntryWriter> {
    this.counter += 1;
    const temp = join(this.target, TMP, `${this.counter}-${randomBytes(4).toString('hex')}`);
    let handle: FileHandle | null = await open(temp, 'w');
    const final = join(this.target, path);
    const close = async (): Promise<void> => {
      const h = handle;
      handle = null;
      await h?.close();
    };
    return {
      write: async (chunk) => {
        await handle!.write(chunk);
      },
      restart: async () => {
        await handle!.truncate(0);
        await close();
        handle = await open(temp, 'w');
      },
      commit: async () => {
        await close();
        const dir = dirname(final);
        if (!this.madeDirs.has(dir)) {
          await mkdir(dir, { recursive: true });
          this.madeDirs.add(dir);
        }
        await rename(temp, final);
      },
      abort: async () => {
        await close();
        await rm(temp, { force: true });
      },
    };
  }

  record(line: ManifestLine): Promise<void> {
    this.lines.set(manifestKey(line), line);
    // One append at a time, so lines never interleave.
    this.appending = this.appending.then(() => appendFile(join(this.target, MANIFEST_NAME), formatLine(line)));
    return this.appending;
  }

  async finish(): Promise<void> {
    await this.appending;
    const manifest = join(this.target, MANIFEST_NAME);
    const temp = join(this.target, TMP, 'manifest.jsonl');
    await writeFile(temp, sortLines(this.lines.values()).map(formatLine).join(''));
    await rename(temp, manifest);
    await rm(join(this.target, TMP), { recursive: true, force: true });
  }

  async abort(): Promise<void> {
    await this.appending.catch(() => undefined);
    await rm(join(this.target, TMP), { recursive: true, force: true });
  }
}
