/**
 * What the parts of the emulator that its server holds (the v1 routes, the control API) use of the
 * server: interfaces the Emulator class implements, so that those parts need not import it.
 */
import type { Clock } from './clock.js';
import type { Company, TokenRegistry } from './company.js';
import type { Faults } from './faults.js';
import type { BodyTimeouts } from './request-body.js';
import type { WebhookDispatcher } from './webhooks.js';

/** What the v1 routes use: the clock, the companies, the faults, the maintenance window. */
export interface EmulatorHost {
  readonly clock: Clock;
  readonly companies: Company[];
  readonly apiFaults: Faults;
  readonly bodyTimeouts: BodyTimeouts;
  inMaintenance(company: Company): boolean;
  retryAfter(serviceSeconds: number): string;
  maintenanceRetryAfter(): number;
}

/** What the control API uses besides: a company by name, both kinds of tokens, the webhook log. */
export interface ControlledEmulator extends EmulatorHost {
  readonly storageFaults: Faults;
  readonly tokens: TokenRegistry;
  readonly legacy: { forget(company: Company): void };
  readonly webhooks: WebhookDispatcher;
  company(name?: string | null): Company | undefined;
}
