/**
 * Face images (api-v2.md 4.4 Members 6 and 7; wire-format.md, Face images): the listing of
 * download URLs, register (members without a photo) and partial update (members with one).
 */
import { createTask, parseBody, requireNonEmpty, type RouteContext, type RouteHandler, type TaskPlan } from '../context.js';
import { decodeFile, updatedSinceFilter } from '../files.js';
import { badRequest } from '../../http-error.js';
import { faceImageBodySchema } from '../../../spec/schemas.js';
import { MAX_PHOTOS_PER_REQUEST } from '../../../spec/limits.js';
import { sniffPhotoType } from '../../../spec/extensions.js';
import { isValidDate } from '../../../spec/time.js';
import { peekEntry, sortedCodes } from '../../lazy-record.js';
import { JsonParts } from '../../send.js';

export const listFaceImages: RouteHandler = (ctx) => {
  const since = ctx.query.get('updated_since');
  if (since !== null && !isValidDate(since)) throw badRequest(`updated_since must be a date YYYY-MM-DD, got "${since}"`);
  const keep = updatedSinceFilter(since);
  const { data } = ctx.company;
  // Walked, not collected: a generated company makes each photo's entry only to list it (lazy-record.ts).
  function* member_data(): Generator<unknown> {
    for (const code of sortedCodes(data.photos)) {
      const photo = peekEntry(data.photos, code)!;
      if (!(code in data.members) || !keep(photo.updated_at)) continue;
      const { url } = ctx.storage.signUrl(ctx.baseUrl, ctx.company, photo.blob, photo.file_name);
      yield { code, file_name: photo.file_name, download_url: url, updated_at: photo.updated_at };
    }
  }
  return { body: JsonParts.withList({}, 'member_data', member_data()) };
};

type Mode = 'register' | 'update';

interface PreparedPhoto {
  code: string;
  problem?: string;
  data?: Buffer;
}

/**
 * The photo as the service stores it: with trimming, a centred square crop (DESIGN.md section 6
 * stands in for face detection); without, the bytes as sent when they are a JPEG, else converted
 * to JPEG, because the service serves jpg only (api-v2.md 4.4 Members 6).
 */
async function storedForm(data: Buffer, trimming: boolean): Promise<Buffer> {
  // libvips loads with the first photo sent, not with the emulator: most runs only read photos.
  const { default: sharp } = await import('sharp');
  const kind = sniffPhotoType(data);
  if (!trimming && kind === 'jpeg') {
    // Kept as sent, but only once it reads as an image: a JPEG signature over other bytes is no
    // photo, and the service would not store it either.
    await sharp(data, { failOn: 'truncated' }).metadata();
    return data;
  }
  const image = sharp(data, { failOn: 'truncated' }).rotate();
  if (!trimming) return image.jpeg({ quality: 90 }).toBuffer();
  const meta = await sharp(data, { failOn: 'truncated' }).metadata();
  // EXIF orientations 5 to 8 swap width and height once rotated.
  const swap = (meta.orientation ?? 1) >= 5;
  const width = (swap ? meta.height : meta.width) ?? 0;
  const height = (swap ? meta.width : meta.height) ?? 0;
  const side = Math.min(width, height);
  return image
    .extract({ left: Math.floor((width - side) / 2), top: Math.floor((height - side) / 2), width: side, height: side })
    .jpeg({ quality: 90 })
    .toBuffer();
}

function faceImageWriter(mode: Mode): RouteHandler {
  return (ctx: RouteContext) => {
    const body = parseBody(faceImageBodySchema, ctx.body);
    requireNonEmpty(body.member_data, 'member_data');
    if (body.member_data.length > MAX_PHOTOS_PER_REQUEST) {
      throw badRequest(`member_data holds ${body.member_data.length} members, over the limit of ${MAX_PHOTOS_PER_REQUEST} per request`);
    }
    const trimming = body.enable_trimming ?? true;
    // Decode now, so the task holds bytes rather than the request's base64 text.
    const prepared: PreparedPhoto[] = body.member_data.map((item) => {
      const decoded = decodeFile(item.base64_face_image, `member ${item.code}: face image`);
      if (!decoded.ok) return { code: item.code, problem: decoded.problem };
      if (!sniffPhotoType(decoded.data)) {
        return { code: item.code, problem: `member ${item.code}: face image is not a JPEG, GIF or PNG image (checked by its bytes)` };
      }
      return { code: item.code, data: decoded.data };
    });
    return createTask(ctx, prepared.length, () => planPhotos(ctx, mode, prepared, trimming));
  };
}

async function planPhotos(ctx: RouteContext, mode: Mode, prepared: PreparedPhoto[], trimming: boolean): Promise<TaskPlan> {
  const { company } = ctx;
  const errors: string[] = [];
  const seen = new Set<string>();
  const ready: { code: string; data: Buffer }[] = [];
  for (const item of prepared) {
    if (seen.has(item.code)) {
      errors.push(`member ${item.code}: appears more than once in member_data`);
      continue;
    }
    seen.add(item.code);
    if (!company.data.members[item.code]) {
      errors.push(`member ${item.code}: no member has this code`);
      continue;
    }
    const hasPhoto = !!company.data.photos[item.code];
    if (mode === 'register' && hasPhoto) {
      errors.push(`member ${item.code}: already has a face image; register is only for members without one (use partial update)`);
      continue;
    }
    if (mode === 'update' && !hasPhoto) {
      errors.push(`member ${item.code}: has no face image; partial update only replaces an existing one (use register)`);
      continue;
    }
    if (item.problem) {
      errors.push(item.problem);
      continue;
    }
    try {
      ready.push({ code: item.code, data: await storedForm(item.data!, trimming) });
    } catch {
      errors.push(`member ${item.code}: face image could not be read as an image (damaged or truncated)`);
    }
  }
  return {
    errors,
    apply: () => {
      for (const { code, data } of ready) {
        company.data.photos[code] = company.storeFile(data, `${code}.jpg`, company.data.photos[code]);
      }
    },
  };
}

export const registerFaceImages = faceImageWriter('register');
export const updateFaceImages = faceImageWriter('update');
