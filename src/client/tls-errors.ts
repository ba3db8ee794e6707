/**
 * Server certificates Node refuses. The handshake failed, so the request never left, and sending
 * it again meets the same certificate: the API client and the downloads say so at once rather
 * than retry.
 */

/** Node's codes for a refused server certificate. */
export const CERTIFICATE_REFUSED: ReadonlySet<string> = new Set([
  'DEPTH_ZERO_SELF_SIGNED_CERT', 'SELF_SIGNED_CERT_IN_CHAIN', 'UNABLE_TO_VERIFY_LEAF_SIGNATURE', 'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY', 'CERT_HAS_EXPIRED', 'CERT_NOT_YET_VALID', 'CERT_UNTRUSTED', 'CERT_REJECTED', 'CERT_REVOKED',
  'CERT_SIGNATURE_FAILURE', 'ERR_TLS_CERT_ALTNAME_INVALID', 'HOSTNAME_MISMATCH', 'INVALID_CA', 'INVALID_PURPOSE', 'PATH_LENGTH_EXCEEDED',
]);

/** What to tell of a refused certificate: the host only (a signed URL's query is its key), Node's reason, and the way out. */
export function certificateRefusedMessage(url: string, code: string, error: unknown): string {
  const { host } = new URL(url);
  return `the TLS certificate of ${host} was refused: ${(error as Error).message} (${code}); if the certificate is signed by a private CA, give that CA to Node with NODE_EXTRA_CA_CERTS=FILE`;
}
