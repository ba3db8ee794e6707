/**
 * Webhook deliveries (api-v2.md section 6): a POST to every setting subscribed to the event, with
 * `Service-Token: <secret_token>`, `User-Agent: Service-Webhook`, the codes split into deliveries of
 * at most 10,000; a receiver that does not answer 2xx within 10 seconds is a failed delivery,
 * never resent. Every delivery is kept in a log that the control API shows.
 */
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { Company } from './company.js';
import { MAX_WEBHOOK_CODES_PER_DELIVERY, WEBHOOK_TIMEOUT_MS } from '../spec/limits.js';
import { WEBHOOK_USER_AGENT, type WebhookEvent } from '../spec/events.js';

export interface DeliveryRecord {
  webhook_id: number;
  url: string;
  event: WebhookEvent;
  event_time: string;
  codes: number;
  status: number | null;
  ok: boolean;
  error?: string;
}

const LOG_LIMIT = 1000;

export class WebhookDispatcher {
  readonly log: DeliveryRecord[] = [];
  /** How long a receiver may take to answer (api-v2.md 6.1); tests shorten it. */
  timeoutMs = WEBHOOK_TIMEOUT_MS;
  private readonly inFlight = new Set<Promise<void>>();

  deliver(company: Company, event: WebhookEvent, codes: string[]): void {
    const eventTime = company.now();
    for (const hook of company.data.webhooks) {
      if (!hook.events.includes(event)) continue;
      for (let i = 0; i < codes.length; i += MAX_WEBHOOK_CODES_PER_DELIVERY) {
        const chunk = codes.slice(i, i + MAX_WEBHOOK_CODES_PER_DELIVERY);
        const body = JSON.stringify({ event, event_time: eventTime, member_data: chunk.map((code) => ({ code })) });
        const record: DeliveryRecord = {
          webhook_id: hook.id, url: hook.url, event, event_time: eventTime, codes: chunk.length, status: null, ok: false,
        };
        const sending = this.post(hook.url, hook.secret_token, body).then(
          (status) => {
            record.status = status;
            record.ok = status >= 200 && status < 300;
            if (!record.ok) record.error = `answered ${status}`;
          },
          (error: Error) => {
            record.error = error.message;
          },
        ).finally(() => {
          if (record.ok) company.stats.webhook_deliveries += 1;
          else company.stats.webhook_failures += 1;
          this.log.push(record);
          if (this.log.length > LOG_LIMIT) this.log.splice(0, this.log.length - LOG_LIMIT);
          this.inFlight.delete(sending);
        });
        this.inFlight.add(sending);
      }
    }
  }

  /** Resolves when every delivery started so far has ended. */
  async settle(): Promise<void> {
    while (this.inFlight.size) await Promise.allSettled([...this.inFlight]);
  }

  private post(url: string, secretToken: string | null, body: string): Promise<number> {
    return new Promise((resolve, reject) => {
      const target = new URL(url);
      const send = target.protocol === 'https:' ? httpsRequest : httpRequest;
      const headers: Record<string, string | number> = {
        'Content-Type': 'application/json',
        'User-Agent': WEBHOOK_USER_AGENT,
        'Content-Length': Buffer.byteLength(body),
      };
      // api-v2.md 6 rule 7 leaves the header without a secret "not shown": the emulator omits it.
      if (secretToken) headers['Service-Token'] = secretToken;
      const late = `no answer within ${this.timeoutMs / 1000} seconds`;
      const req = send(target, { method: 'POST', headers, timeout: this.timeoutMs }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
        res.on('error', reject);
      });
      // The 10 seconds cover the whole answer, not only idle time (api-v2.md 6.1).
      const timer = setTimeout(() => req.destroy(new Error(late)), this.timeoutMs);
      req.on('close', () => clearTimeout(timer));
      req.on('timeout', () => req.destroy(new Error(late)));
      req.on('error', reject);
      req.end(body);
    });
  }
}
