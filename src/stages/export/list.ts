/**
 * The export's list stage: what is to be exported (members' photos, or the file parts of the
 * sheets named) and every file of it, with a download URL valid 15 minutes. The lister stays with
 * the run: a download whose URL expired asks it for a fresh listing.
 */
import type { WdsClient } from '../../client/client.js';
import { UrlLister, attachmentTargets, type ListTarget, type RemoteFile } from './list-urls.js';

/** What the list stage lists. */
export interface ListRequest {
  what: 'photos' | 'attachments';
  /** Attachments: only these sheets. */
  sheets?: number[];
  /** Attachments: only this file part of the one sheet named. */
  field?: number;
  /** Only files updated on or after this date (`YYYY-MM-DD`). */
  since?: string;
}

/** The files listed, and the lister that lists them again when their URLs expire. */
export interface Listed {
  /** In memory (`listFiles`), or in temporary files for an export's run (UrlLister.listToDisk). */
  files: Iterable<RemoteFile> & { readonly length: number };
  lister: UrlLister;
  /** Remarks for the report (no sheet has a file part). */
  notes: string[];
}

/**
 * What is to be listed (the file parts, for attachments), and the lister that lists it. `signal`
 * stops its requests: those of this call and every listing of the lister's.
 */
export async function openLister(client: WdsClient, request: ListRequest, signal?: AbortSignal): Promise<Omit<Listed, 'files'>> {
  const targets: ListTarget[] = request.what === 'photos'
    ? [{ id: 'photos', kind: 'photo' }]
    : await attachmentTargets(client, { sheets: request.sheets, field: request.field, signal });
  const notes = request.what === 'attachments' && targets.length === 0 ? ['no sheet has a file part'] : [];
  return { lister: new UrlLister(client, targets, request.since, signal), notes };
}

/** Lists every file; `onListed` is given each listing's files (a photo listing, or a file part's) as it comes in. */
export async function listFiles(client: WdsClient, request: ListRequest, onListed?: (files: Iterable<RemoteFile>) => void): Promise<Listed> {
  const { lister, notes } = await openLister(client, request);
  return { files: await lister.listAll(onListed), lister, notes };
}
