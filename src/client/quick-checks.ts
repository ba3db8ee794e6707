/**
 * Checks by hand of the listings' answers, which hold an entry per file: a large company's
 * attachment listing is 10,000 members a file part, and zod copied every loose object of it (a
 * tenth of a second of an archive run's start, with the collections of the copies). An answer a
 * check passes, its schema passes too and would give back equal (loose objects keep every key);
 * one it does not pass goes to the schema, for its message.
 */
import type { z } from 'zod';
import { attachmentListSchema, faceImageListSchema } from '../spec/schemas.js';

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** `{ member_data: [...] }` whose every entry `entry` passes. */
function memberData(entry: (value: Record<string, unknown>) => boolean): (value: unknown) => boolean {
  return (value) => {
    if (!isObject(value) || !Array.isArray(value.member_data)) return false;
    for (const item of value.member_data) if (!isObject(item) || !entry(item)) return false;
    return true;
  };
}

/** A listed file: its name, download URL and time, all strings. */
const listedFile = (file: Record<string, unknown>): boolean =>
  typeof file.file_name === 'string' && typeof file.download_url === 'string' && typeof file.updated_at === 'string';

/** An entry of the face image listing. */
const photoEntry = (member: Record<string, unknown>): boolean => typeof member.code === 'string' && listedFile(member);

/** An entry of an attachment listing: a member and its records. */
const attachmentEntry = (member: Record<string, unknown>): boolean => {
  if (typeof member.code !== 'string' || !Array.isArray(member.records)) return false;
  for (const record of member.records) if (!isObject(record) || !listedFile(record)) return false;
  return true;
};

const checks = new Map<z.ZodType, (value: unknown) => boolean>([
  [faceImageListSchema, memberData(photoEntry)],
  [attachmentListSchema, memberData(attachmentEntry)],
]);

const entryChecks = new Map<z.ZodType, (value: Record<string, unknown>) => boolean>([
  [faceImageListSchema, photoEntry],
  [attachmentListSchema, attachmentEntry],
]);

/** Whether `entry`, an element of `schema`'s `member_data`, passes it, known without zod; false when not known that way. */
export function entryPassesQuickly(schema: z.ZodType, entry: unknown): boolean {
  return isObject(entry) && (entryChecks.get(schema)?.(entry) ?? false);
}

/** Whether `value` passes `schema`, known without zod; false when not known that way. */
export function passesQuickly(schema: z.ZodType, value: unknown): boolean {
  return checks.get(schema)?.(value) ?? false;
}
