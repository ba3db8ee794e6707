/** Starting a server on a port, shared by the status server and the webhook receiver. */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * Listens on `port` (0: one the system picks) and `host`, and answers `host:port` as a URL's
 * authority, an IPv6 address in brackets. A port already taken rejects with the server's error.
 */
export async function listenOn(server: Server, port: number, host: string): Promise<string> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  return `${address.family === 'IPv6' ? `[${address.address}]` : address.address}:${address.port}`;
}
