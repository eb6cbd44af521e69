/**
 * Email as a view over the one durable request: when a request opens (and on reminders and
 * escalations) every approver of the addressed group who has a configured address, other than
 * the requester, gets one message through SMTP (`nodemailer`) with their own signed, single-use,
 * expiring link to the decision page (`email-links.ts`, `email-link-routes.tsx`).
 *
 * The message says what is asked (tool, requester, the policy's reason, the deadline) and holds
 * the link; the tool's arguments are not in the mail — the page shows them to the signed-in
 * approver. Delivery failures are logged (approver id and the SMTP server's error; never the link)
 * and never thrown.
 * After a break-glass approval every approver it skipped who has an address gets a notice (who,
 * why, when, and the review page; no decision link: there is nothing left to decide).
 * Deliberately does not: mail on `decided` (the page of an old link says the request is decided),
 * retry (nodemailer's transport reports the SMTP server's answer; the inbox still shows the request).
 */
import nodemailer from 'nodemailer';
import type { Logger } from 'pino';
import type { Approver } from '../api/http-auth.js';
import { reasonShown, visible } from '../inbox/format.js';
import type { AccessRequestRecord, ApprovalStore } from '../store/store.js';
import type { EmailLinkSigner } from './email-links.js';
import type { ApprovalNotification, ApprovalNotifier } from './notifier.js';

/** Default lifetime of an emailed decision link: 24 h in ms (never past the request's deadline). */
export const DEFAULT_EMAIL_LINK_TTL_MS = 24 * 3_600_000;

/** Settings of the email channel (`src/config.ts`: `COUNTERSIGN_SMTP_URL`, `COUNTERSIGN_EMAIL_*`). */
export interface EmailSettings {
  /** nodemailer SMTP URL: `smtp://user:pass@host:587` (STARTTLS when offered) or `smtps://host:465`. */
  smtpUrl: string;
  /** `From:` address, e.g. `Countersign <approvals@example.com>`. */
  from: string;
  /** Approver id → email address. An approver without one gets no mail. */
  addresses: Readonly<Record<string, string>>;
  /** Link lifetime, ms; default {@link DEFAULT_EMAIL_LINK_TTL_MS}. */
  linkTtlMs?: number;
}

/** Dependencies of {@link createEmailNotifier}. */
export interface EmailNotifierDeps {
  settings: EmailSettings;
  signer: EmailLinkSigner;
  approvers: readonly Approver[];
  store: ApprovalStore;
  /** Absolute base URL of the approval service; links are `<base>/approver/email/<token>`. */
  publicBaseUrl: string;
  now: () => number;
  logger: Logger;
}

/** The path of the decision page for `token`, under the service's base URL. */
export const emailLinkPath = (token: string): string => `/approver/email/${token}`;

/** Subject and plain-text body of one notification (control and bidi characters of request data made visible). */
export function emailMessage(
  record: AccessRequestRecord,
  prefix: string,
  link: string,
  linkExpiresAtMs: number,
): { subject: string; text: string } {
  const b = record.body;
  const subject = `${prefix}: ${visible(b.resource.id)} requested by ${visible(b.subject.sub)}`.slice(0, 200);
  const text = [
    `${visible(b.subject.sub)} asks to run ${visible(b.resource.id)}, which needs approval from ${visible(b.approver_group)}.`,
    '',
    `Why: ${visible(reasonShown(record))}`,
    `Approvals needed: ${record.requiredApprovals}`,
    `Decide by: ${new Date(record.expiresAtMs).toISOString()}`,
    '',
    'Open this link to see the request and decide (you will be asked to sign in to the approver inbox):',
    link,
    '',
    `The link is yours alone, works once, and expires at ${new Date(linkExpiresAtMs).toISOString()}. Opening it decides nothing.`,
  ].join('\n');
  return { subject, text };
}

/** Subject and plain-text body of the notice to an approver a break-glass approval skipped (request data made visible). */
export function breakGlassMessage(
  record: AccessRequestRecord,
  glass: { by: string; reason: string; atMs: number },
  reviewUrl: string,
): { subject: string; text: string } {
  const b = record.body;
  const subject = `Break-glass: ${visible(glass.by)} approved their own ${visible(b.resource.id)} request`.slice(0, 200);
  const text = [
    `${visible(glass.by)} used break-glass at ${new Date(glass.atMs).toISOString()} to approve their own request to run ${visible(b.resource.id)}, which needed approval from ${visible(b.approver_group)}. You could have decided it and were skipped.`,
    '',
    `Their reason: ${visible(glass.reason)}`,
    '',
    'The approval needs a review by someone other than them. Review it here (you will be asked to sign in to the approver inbox):',
    reviewUrl,
  ].join('\n');
  return { subject, text };
}

/** Create the email notifier. Throws `Error` when the SMTP URL is not `smtp:` / `smtps:`. */
export function createEmailNotifier(deps: EmailNotifierDeps): ApprovalNotifier {
  const { settings, signer, store, logger, now } = deps;
  if (!/^smtps?:\/\//.test(settings.smtpUrl)) throw new Error('the SMTP URL must start with smtp:// or smtps://');
  const transport = nodemailer.createTransport(settings.smtpUrl);
  const log = logger.child({ channel: 'email' });
  for (const approverId of Object.keys(settings.addresses))
    if (!deps.approvers.some((a) => a.id === approverId))
      log.warn({ approver: approverId }, 'email address given for an approver id that is not configured: it receives nothing');
  const base = deps.publicBaseUrl.replace(/\/+$/, '');
  const ttl = settings.linkTtlMs ?? DEFAULT_EMAIL_LINK_TTL_MS;

  async function send(record: AccessRequestRecord, group: string, prefix: string): Promise<void> {
    const requesters = new Set([record.body.subject.sub.toLowerCase()]);
    const recipients = deps.approvers.filter(
      (a) => a.groups.includes(group) && Object.hasOwn(settings.addresses, a.id) && !requesters.has(a.id.toLowerCase()),
    );
    for (const approver of recipients) {
      const at = now();
      const expiresAtMs = Math.min(at + ttl, record.expiresAtMs);
      try {
        const token = await signer.sign(record.id, approver.id, expiresAtMs, at);
        const link = `${base}${emailLinkPath(token)}`;
        const { subject, text } = emailMessage(record, prefix, link, expiresAtMs);
        await transport.sendMail({ from: settings.from, to: settings.addresses[approver.id], subject, text });
        log.info({ requestId: record.id, approver: approver.id }, 'approval email sent');
      } catch (err) {
        log.warn({ requestId: record.id, approver: approver.id, err: (err as Error).message }, 'approval email not sent');
      }
    }
  }

  async function sendBreakGlass(n: ApprovalNotification): Promise<void> {
    const glass = n.breakGlass;
    if (glass === undefined) return;
    const { subject, text } = breakGlassMessage(n.request, glass, `${base}/approver/reviews`);
    for (const id of glass.skipped) {
      if (!Object.hasOwn(settings.addresses, id)) continue;
      try {
        await transport.sendMail({ from: settings.from, to: settings.addresses[id], subject, text });
        log.info({ requestId: n.request.id, approver: id }, 'break-glass notice sent');
      } catch (err) {
        log.warn({ requestId: n.request.id, approver: id, err: (err as Error).message }, 'break-glass notice not sent');
      }
    }
  }

  return {
    channel: 'email',
    async notify(n: ApprovalNotification) {
      if (n.kind === 'break-glass') return await sendBreakGlass(n);
      if (n.kind === 'decided') return;
      const current = (await store.get(n.request.id)) ?? n.request;
      if (current.status !== 'pending') return;
      const prefix =
        n.kind === 'opened' ? 'Approval needed' : n.kind === 'reminded' ? 'Reminder: approval still needed' : 'Escalated: approval needed';
      await send(current, n.group, prefix);
    },
  };
}
