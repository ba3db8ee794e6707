/**
 * The self-signed certificate of test/fixtures/tls (127.0.0.1 and localhost, valid until 2126),
 * for https servers whose certificate Node refuses.
 */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const folder = join(dirname(fileURLToPath(import.meta.url)), '..', 'fixtures', 'tls');

/** The certificate and key, as `https.createServer` takes them. */
export function selfSignedTls(): { cert: Buffer; key: Buffer } {
  return { cert: readFileSync(join(folder, 'self-signed.crt')), key: readFileSync(join(folder, 'self-signed.key')) };
}
