/** How far an import is, as its `onProgress` sees it. */
export interface ImportProgress {
  /** `check`: reading and checking the files, nothing sent yet; `send`: from the first request on (checking goes on beside it). */
  stage: 'check' | 'send';
  /**
   * While checking, the files checked so far; once every file is checked before the first
   * request, `total` (= `done`) is the number ready to send; while sending, the files whose
   * request has ended, of `total`.
   */
  done: number;
  /** Once every file is checked, or while sending: the files to send (less as the check refuses some). */
  total?: number;
  /** While sending: the files checked so far (the next batches are checked while one is sent). */
  checked?: number;
  /** While sending: the bytes of the files whose request has ended. */
  bytes?: number;
  /** While sending: the bytes of every file to send (files not checked yet counted by their size in the source). */
  totalBytes?: number;
  /** While sending: the update requests sent so far. */
  requests?: number;
  /** While sending: the fewest update requests the files to send need. */
  minimum?: number;
}

/** What one lane (a route, and for attachments a file part) holds to send. */
interface LaneLoad {
  files: number;
  bytes: number;
  /** Bytes of request body, for the byte limit. */
  body: number;
}

/**
 * Keeps the figures of an import's progress as the stages move (files named for a lane, checked,
 * refused or skipped, sent) and tells `onProgress`. `minimumOf` gives the fewest requests a lane
 * needs for its files and body bytes.
 */
export class ImportTracker<L> {
  readonly #lanes = new Map<L, LaneLoad>();
  #checked = 0;
  #toCheck = 0;
  #ready = 0;
  #done = 0;
  #sentBytes = 0;
  #requests = 0;
  #sending = false;
  #told = false;

  constructor(
    private readonly minimumOf: (files: number, body: number) => number,
    private readonly onProgress?: (progress: ImportProgress) => void,
  ) {}

  /** A file named for `lane` (before its check), with its bytes and body bytes as far as they are known. */
  planned(lane: L, bytes: number, body: number): void {
    const load = this.#lanes.get(lane) ?? { files: 0, bytes: 0, body: 0 };
    load.files += 1;
    load.bytes += bytes;
    load.body += body;
    this.#lanes.set(lane, load);
  }

  /** Files the check stage will read (known once the files are routed, before any is read). */
  toCheck(files: number): void {
    this.#toCheck = files;
  }

  /** A planned file checked: it goes with its real size (`kept`), or leaves its lane (refused, skipped). */
  checked(lane: L | null, before: { bytes: number; body: number }, after: { bytes: number; body: number } | null): void {
    this.#checked += 1;
    const load = lane === null ? undefined : this.#lanes.get(lane);
    if (load) {
      load.bytes += (after?.bytes ?? 0) - before.bytes;
      load.body += (after?.body ?? 0) - before.body;
      if (!after) load.files -= 1;
    }
    if (after && lane !== null) this.#ready += 1;
    this.#tell();
  }

  /** Every file is checked: before the first request, the check stage's last word. */
  allChecked(): void {
    if (this.#sending || this.#told) return;
    this.#told = true;
    this.onProgress?.({ stage: 'check', done: this.#ready, total: this.#ready });
  }

  /** A request is about to leave: the send stage starts with the first. */
  sending(): void {
    if (this.#sending) return;
    // The check stage's last word comes before the first request whenever it is true by then.
    if (this.#checked >= this.#toCheck) this.allChecked();
    this.#sending = true;
    this.#tell();
  }

  /** A request has ended for `files` files of `bytes` bytes, after `requests` requests in all. */
  sent(files: number, bytes: number, requests: number): void {
    this.#done += files;
    this.#sentBytes += bytes;
    this.#requests = requests;
    this.#tell();
  }

  /** The fewest requests the files to send need, lane by lane. */
  get minimum(): number {
    let n = 0;
    for (const load of this.#lanes.values()) if (load.files > 0) n += this.minimumOf(load.files, load.body);
    return n;
  }

  #tell(): void {
    if (!this.onProgress) return;
    if (!this.#sending) {
      this.onProgress({ stage: 'check', done: this.#checked });
      return;
    }
    let total = 0;
    let totalBytes = 0;
    for (const load of this.#lanes.values()) {
      total += load.files;
      totalBytes += load.bytes;
    }
    this.onProgress({
      stage: 'send', done: this.#done, total, checked: this.#checked, bytes: this.#sentBytes, totalBytes, requests: this.#requests, minimum: this.minimum,
    });
  }
}
