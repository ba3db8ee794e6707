/**
 * Images of the sample company, drawn as SVG and rendered by sharp: face photos (a simple face on
 * a varied background, with a little sensor-like grain so they weigh what real photos weigh) and
 * scanned-looking certificates. Used by make-samples.ts; the same input gives the same bytes.
 */
import sharp from 'sharp';
import { SeededRandom } from '../src/emulator/seeded-random.js';

const SKINS = ['#f6d5bd', '#eec1a0', '#e0ac86', '#c98f65', '#a86f4c', '#8a5a3c'];
const HAIRS = ['#1f1a17', '#2e2420', '#4a3326', '#6b4a2f', '#9a7650', '#b9a28a', '#5a5a5e'];
const SHIRTS = ['#2f4a7a', '#f2f2f0', '#7a2a35', '#3d6b58', '#55555c', '#1f1f24', '#8fa8c8', '#c9b48a'];
const BACKDROPS: [string, string][] = [
  ['#cfe0ef', '#8fb1d3'], ['#ece3d2', '#c8b896'], ['#d7e8d5', '#9cc39a'], ['#e8dbe9', '#b9a0c0'],
  ['#dedede', '#a7a7ad'], ['#f3e6cf', '#d9b982'], ['#d2e4e8', '#86aab3'],
];

export type HairStyle = 'short' | 'long' | 'bob' | 'bun' | 'bald';

export interface FaceSpec {
  /** Seed of the random choices (colours, shapes, grain). */
  seed: number;
  hair: HairStyle;
  glasses?: boolean;
}

function hairShapes(style: HairStyle, colour: string): { back: string; front: string } {
  switch (style) {
    case 'long':
      return {
        back: `<path d="M95 215 Q92 95 200 88 Q308 95 305 215 L318 405 Q200 430 82 405 Z" fill="${colour}"/>`,
        front: `<path d="M108 205 Q110 105 200 100 Q292 105 292 205 Q270 150 200 142 Q140 146 108 205 Z" fill="${colour}"/>`,
      };
    case 'bob':
      return {
        back: `<path d="M98 210 Q96 98 200 90 Q304 98 302 210 L306 318 Q250 330 240 300 L160 300 Q150 330 94 318 Z" fill="${colour}"/>`,
        front: `<path d="M106 215 Q105 100 200 96 Q295 100 294 215 Q288 160 262 150 Q200 170 130 150 Q112 165 106 215 Z" fill="${colour}"/>`,
      };
    case 'bun':
      return {
        back: `<circle cx="200" cy="78" r="42" fill="${colour}"/>`,
        front: `<path d="M110 200 Q108 104 200 98 Q292 104 290 200 Q280 140 200 132 Q120 140 110 200 Z" fill="${colour}"/>`,
      };
    case 'bald':
      return {
        back: '',
        front: `<path d="M112 210 Q110 175 122 160 L128 215 Z M288 210 Q290 175 278 160 L272 215 Z" fill="${colour}"/>`,
      };
    case 'short':
      return {
        back: '',
        front: `<path d="M108 210 Q100 96 200 92 Q300 96 292 210 Q284 150 250 138 Q200 128 150 140 Q118 152 108 210 Z" fill="${colour}"/>`,
      };
  }
}

function faceSvg(spec: FaceSpec): string {
  const random = new SeededRandom(spec.seed);
  const skin = random.pick(SKINS);
  const hair = random.pick(HAIRS);
  const shirt = random.pick(SHIRTS);
  const [top, bottom] = random.pick(BACKDROPS);
  const eyeY = 236 + random.int(-4, 4);
  const smile = random.int(4, 14);
  const { back, front } = hairShapes(spec.hair, hair);
  const glasses = spec.glasses
    ? `<g fill="none" stroke="#2b2b2b" stroke-width="4"><circle cx="164" cy="${eyeY}" r="22"/><circle cx="236" cy="${eyeY}" r="22"/><path d="M186 ${eyeY} Q200 ${eyeY - 8} 214 ${eyeY}"/></g>`
    : '';
  const eye = (x: number): string =>
    `<ellipse cx="${x}" cy="${eyeY}" rx="14" ry="8" fill="#fbfbfb"/><circle cx="${x}" cy="${eyeY}" r="7" fill="#3a2a22"/>` +
    `<circle cx="${x}" cy="${eyeY}" r="3.5" fill="#111"/><circle cx="${x + 2.5}" cy="${eyeY - 2.5}" r="1.6" fill="#fff"/>`;
  return `<svg xmlns="http://www.w3.org/2000/svg" width="400" height="500" viewBox="0 0 400 500">
  <defs><linearGradient id="bg" x1="0" y1="0" x2="0.3" y2="1"><stop offset="0" stop-color="${top}"/><stop offset="1" stop-color="${bottom}"/></linearGradient>
  <radialGradient id="face" cx="0.45" cy="0.4" r="0.7"><stop offset="0" stop-color="${skin}"/><stop offset="1" stop-color="${skin}" stop-opacity="0.85"/></radialGradient></defs>
  <rect width="400" height="500" fill="url(#bg)"/>
  ${back}
  <path d="M40 500 Q50 380 200 370 Q350 380 360 500 Z" fill="${shirt}"/>
  <path d="M168 300 L232 300 L238 385 Q200 405 162 385 Z" fill="${skin}"/>
  <path d="M168 372 Q200 398 232 372 L222 392 Q200 410 178 392 Z" fill="#000" opacity="0.12"/>
  <ellipse cx="108" cy="245" rx="14" ry="26" fill="${skin}"/><ellipse cx="292" cy="245" rx="14" ry="26" fill="${skin}"/>
  <ellipse cx="200" cy="232" rx="94" ry="118" fill="${skin}"/>
  <ellipse cx="200" cy="232" rx="94" ry="118" fill="url(#face)"/>
  ${front}
  <path d="M146 ${eyeY - 22} Q164 ${eyeY - 32} 182 ${eyeY - 22}" stroke="${hair}" stroke-width="6" fill="none" stroke-linecap="round"/>
  <path d="M218 ${eyeY - 22} Q236 ${eyeY - 32} 254 ${eyeY - 22}" stroke="${hair}" stroke-width="6" fill="none" stroke-linecap="round"/>
  ${eye(164)}${eye(236)}
  <path d="M200 ${eyeY + 8} Q194 ${eyeY + 40} 188 ${eyeY + 46} Q200 ${eyeY + 52} 210 ${eyeY + 46}" stroke="#000" stroke-opacity="0.25" stroke-width="3" fill="none"/>
  <path d="M174 ${eyeY + 72} Q200 ${eyeY + 72 + smile} 226 ${eyeY + 72}" stroke="#9c3b3f" stroke-width="5" fill="none" stroke-linecap="round"/>
  <ellipse cx="150" cy="${eyeY + 44}" rx="16" ry="9" fill="#e88a8a" opacity="0.18"/><ellipse cx="250" cy="${eyeY + 44}" rx="16" ry="9" fill="#e88a8a" opacity="0.18"/>
  ${glasses}
</svg>`;
}

/** A 400x500 JPEG face photo; grain makes it weigh like a camera photo (20-80 KB). */
export async function facePhoto(spec: FaceSpec): Promise<Buffer> {
  const { data, info } = await sharp(Buffer.from(faceSvg(spec))).flatten({ background: '#ffffff' }).raw().toBuffer({ resolveWithObject: true });
  const random = new SeededRandom(spec.seed ^ 0x5eed);
  const grain = 6 + (spec.seed % 7);
  for (let i = 0; i < data.length; i += 1) {
    const value = data[i]! + Math.round((random.next() - 0.5) * 2 * grain);
    data[i] = value < 0 ? 0 : value > 255 ? 255 : value;
  }
  return sharp(data, { raw: { width: info.width, height: info.height, channels: info.channels } }).jpeg({ quality: 88 }).toBuffer();
}

const escapeXml = (text: string): string => text.replace(/[<>&"]/g, (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', '"': '&quot;' })[c]!);

/** A scanned-looking certificate (PNG or JPEG), 800x566, in English. */
export async function certificateImage(title: string, holder: string, date: string, format: 'png' | 'jpg'): Promise<Buffer> {
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="800" height="566">
  <rect width="800" height="566" fill="#fbf8ef"/>
  <rect x="24" y="24" width="752" height="518" fill="none" stroke="#8a6d2f" stroke-width="6"/>
  <rect x="38" y="38" width="724" height="490" fill="none" stroke="#b89a55" stroke-width="2"/>
  <text x="400" y="130" font-family="DejaVu Serif, serif" font-size="44" text-anchor="middle" fill="#3b2f1a">CERTIFICATE</text>
  <text x="400" y="200" font-family="DejaVu Sans, sans-serif" font-size="26" text-anchor="middle" fill="#333">${escapeXml(title)}</text>
  <text x="400" y="270" font-family="DejaVu Sans, sans-serif" font-size="20" text-anchor="middle" fill="#555">This certifies that</text>
  <text x="400" y="320" font-family="DejaVu Serif, serif" font-size="34" text-anchor="middle" fill="#222">${escapeXml(holder)}</text>
  <text x="400" y="370" font-family="DejaVu Sans, sans-serif" font-size="20" text-anchor="middle" fill="#555">has passed the examination on ${escapeXml(date)}</text>
  <circle cx="640" cy="455" r="48" fill="none" stroke="#c0392b" stroke-width="5"/>
  <text x="640" y="463" font-family="DejaVu Sans, sans-serif" font-size="22" text-anchor="middle" fill="#c0392b">SEAL</text>
  <line x1="120" y1="470" x2="380" y2="470" stroke="#444" stroke-width="2"/>
</svg>`;
  const image = sharp(Buffer.from(svg)).flatten({ background: '#ffffff' });
  return format === 'png' ? image.png({ compressionLevel: 9, palette: true }).toBuffer() : image.jpeg({ quality: 80 }).toBuffer();
}
