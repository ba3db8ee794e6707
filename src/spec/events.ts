// api-v2.md section 6.
/** The member events webhooks deliver. */
export const WEBHOOK_EVENTS = ['member_created', 'member_updated', 'member_deleted'] as const;
/** A member event a webhook can deliver. */
export type WebhookEvent = (typeof WEBHOOK_EVENTS)[number];

// api-v2.md section 6.
/** The User-Agent of webhook deliveries. */
export const WEBHOOK_USER_AGENT = 'Service-Webhook';

// wire-format.md, Common.
/** A task's statuses: waiting and running, then OK (done), NG (refused) or ERROR (failed). */
export const TASK_STATUSES = ['WAITING', 'RUNNING', 'OK', 'NG', 'ERROR'] as const;
/** A task's status. */
export type TaskStatus = (typeof TASK_STATUSES)[number];
/** The statuses a task ends with. */
export const FINAL_TASK_STATUSES: readonly TaskStatus[] = ['OK', 'NG', 'ERROR'];
/** Whether a task with this status has ended. */
export function isFinalTaskStatus(status: string): boolean {
  return (FINAL_TASK_STATUSES as readonly string[]).includes(status);
}
