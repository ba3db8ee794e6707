/**
 * The errors of an export's target, apart from the sink's interface so that what the sinks read
 * (the manifest, the recorded source) can refuse a target without importing the sink.
 */
import { noSpaceCause } from '../util/no-space.js';

/** What the system's error code means for a user, for the ones a full or unwritable target gives. */
const CAUSES: Record<string, string> = {
  ENOSPC: 'the disk is full',
  EDQUOT: 'the disk quota is used up',
  EFBIG: 'the file is too large for the file system',
  EACCES: 'permission denied',
  EPERM: 'permission denied',
  EROFS: 'the file system is read-only',
  EIO: 'an input/output error on the disk',
};

/** A target the run may not write for a reason of its own, not the disk's: passed on as it is, not as a TargetError. */
export class TargetRefusedError extends Error {
  override name = 'TargetRefusedError';
}

/**
 * A fatal error writing an export: names the target (the folder or zip the user gave) and the
 * cause, and says what a rerun does.
 */
export class TargetError extends Error {
  readonly code: string | undefined;

  constructor(readonly target: string, cause: unknown, path?: string) {
    const code = (cause as { code?: unknown }).code;
    const known = code === 'ENOSPC' ? noSpaceCause(target) : typeof code === 'string' ? CAUSES[code] : undefined;
    const what = known ? `${known} (${code}${path ? `, writing ${path}` : ''})` : `${path ? `${path}: ` : ''}${(cause as Error).message}`;
    super(`cannot write the export ${target}: ${what}; run the export again once that is fixed, and it goes on from the files already there`, { cause });
    this.name = 'TargetError';
    this.code = typeof code === 'string' ? code : undefined;
  }
}
