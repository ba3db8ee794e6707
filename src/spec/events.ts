/** Webhook event names (api-v2.md section 6). */
export const WEBHOOK_EVENTS = ['member_created', 'member_updated', 'member_deleted'] as const;
export type WebhookEvent = (typeof WEBHOOK_EVENTS)[number];

/** The User-Agent of webhook deliveries (api-v2.md section 6). */
export const WEBHOOK_USER_AGENT = 'Service-Webhook';

/** Final and running task statuses (wire-format.md, Common). */
export const TASK_STATUSES = ['WAITING', 'RUNNING', 'OK', 'NG', 'ERROR'] as const;
export type TaskStatus = (typeof TASK_STATUSES)[number];
export const FINAL_TASK_STATUSES: readonly TaskStatus[] = ['OK', 'NG', 'ERROR'];
export function isFinalTaskStatus(status: string): boolean {
  return (FINAL_TASK_STATUSES as readonly string[]).includes(status);
}
