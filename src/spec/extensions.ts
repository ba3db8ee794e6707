/** File types the service accepts, as data (api-v2.md 4.4 Members 7 and Sheets 9). */

/** Face images: jpg/jpeg, gif, png; the bytes must be of that type too. */
export const PHOTO_EXTENSIONS = ['jpg', 'jpeg', 'gif', 'png'] as const;

// api-v2.md 4.4 Sheets 9.
/** Attachments: the extensions the service takes. */
export const ATTACHMENT_EXTENSIONS = [
  'txt', 'csv', 'xml', 'htm', 'html', 'doc', 'docx', 'rtf', 'xls', 'xlsx', 'xlsm', 'ppt', 'pptx',
  'pdf', 'jpeg', 'jpg', 'gif', 'png', 'tif', 'zip', 'odp', 'ods', 'xdw', 'msg',
] as const;

/** An extension a photo may have. */
export type PhotoExtension = (typeof PHOTO_EXTENSIONS)[number];
/** An extension an attachment may have. */
export type AttachmentExtension = (typeof ATTACHMENT_EXTENSIONS)[number];

/** The lower-cased extension of a file name, without the dot; '' when there is none. */
export function extensionOf(fileName: string): string {
  const base = fileName.slice(fileName.lastIndexOf('/') + 1);
  const dot = base.lastIndexOf('.');
  return dot <= 0 ? '' : base.slice(dot + 1).toLowerCase();
}

/** Whether a photo may have this extension (without the dot; any case). */
export function isPhotoExtension(ext: string): ext is PhotoExtension {
  return (PHOTO_EXTENSIONS as readonly string[]).includes(ext.toLowerCase());
}

/** Whether an attachment may have this extension (without the dot; any case). */
export function isAttachmentExtension(ext: string): ext is AttachmentExtension {
  return (ATTACHMENT_EXTENSIONS as readonly string[]).includes(ext.toLowerCase());
}

// The service checks the bytes, not the name (DESIGN.md section 5).
/** The image type a photo's leading bytes name (JPEG FF D8 FF, PNG's signature, GIF87a or GIF89a), or null. */
export function sniffPhotoType(bytes: Uint8Array): 'jpeg' | 'png' | 'gif' | null {
  if (bytes.length >= 3 && bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff) return 'jpeg';
  const png = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];
  if (bytes.length >= 8 && png.every((b, i) => bytes[i] === b)) return 'png';
  if (bytes.length >= 6) {
    const head = String.fromCharCode(...bytes.subarray(0, 6));
    if (head === 'GIF87a' || head === 'GIF89a') return 'gif';
  }
  return null;
}
