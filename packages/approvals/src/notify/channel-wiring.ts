/**
 * The approval service's notification channels from the parsed configuration (`src/config.ts`:
 * `COUNTERSIGN_SLACK_*`, `COUNTERSIGN_SMTP_URL`, `COUNTERSIGN_EMAIL_*`) and the data folder's
 * secrets (`emailLinkKey`), as `createApprovalService` options. Reads no environment.
 */
import type { ApprovalsSettings } from '../config.js';
import type { EmailSettings } from './email.js';
import type { SlackSettings } from './slack.js';

/** The part of the configuration this module reads. */
export type ChannelConfig = Pick<
  ApprovalsSettings,
  | 'COUNTERSIGN_SLACK_BOT_TOKEN'
  | 'COUNTERSIGN_SLACK_SIGNING_SECRET'
  | 'COUNTERSIGN_SLACK_API_URL'
  | 'COUNTERSIGN_SLACK_CHANNELS'
  | 'COUNTERSIGN_SLACK_USERS'
  | 'COUNTERSIGN_SMTP_URL'
  | 'COUNTERSIGN_EMAIL_FROM'
  | 'COUNTERSIGN_EMAIL_ADDRESSES'
  | 'COUNTERSIGN_EMAIL_LINK_TTL_MS'
>;

/**
 * `{slack?, email?}` for `createApprovalService`: Slack when `COUNTERSIGN_SLACK_BOT_TOKEN` is
 * non-empty, email when `COUNTERSIGN_SMTP_URL` is. Throws `Error` naming every missing setting
 * (Slack: the signing secret, at least one group channel; email: at least one approver address,
 * and `emailLinkKey` in `secrets.json`).
 */
export function channelOptionsFromConfig(
  config: ChannelConfig,
  secrets: { emailLinkKey?: string | undefined },
): { slack?: SlackSettings; email?: EmailSettings & { linkKey: string } } {
  const problems: string[] = [];
  const out: { slack?: SlackSettings; email?: EmailSettings & { linkKey: string } } = {};
  const token = config.COUNTERSIGN_SLACK_BOT_TOKEN ?? '';
  if (token !== '') {
    const signingSecret = config.COUNTERSIGN_SLACK_SIGNING_SECRET ?? '';
    if (signingSecret === '') problems.push('COUNTERSIGN_SLACK_SIGNING_SECRET is required with COUNTERSIGN_SLACK_BOT_TOKEN');
    if (Object.keys(config.COUNTERSIGN_SLACK_CHANNELS).length === 0)
      problems.push('COUNTERSIGN_SLACK_CHANNELS (group=channel id, …) is required with COUNTERSIGN_SLACK_BOT_TOKEN');
    out.slack = {
      botToken: token,
      signingSecret,
      apiUrl: config.COUNTERSIGN_SLACK_API_URL,
      channels: config.COUNTERSIGN_SLACK_CHANNELS,
      users: config.COUNTERSIGN_SLACK_USERS,
    };
  }
  const smtp = config.COUNTERSIGN_SMTP_URL ?? '';
  if (smtp !== '') {
    if (Object.keys(config.COUNTERSIGN_EMAIL_ADDRESSES).length === 0)
      problems.push('COUNTERSIGN_EMAIL_ADDRESSES (approver id=address, …) is required with COUNTERSIGN_SMTP_URL');
    const linkKey = secrets.emailLinkKey ?? '';
    if (linkKey === '') problems.push('secrets.json has no emailLinkKey (start once with this version to add it)');
    out.email = {
      smtpUrl: smtp,
      from: config.COUNTERSIGN_EMAIL_FROM,
      addresses: config.COUNTERSIGN_EMAIL_ADDRESSES,
      linkTtlMs: config.COUNTERSIGN_EMAIL_LINK_TTL_MS,
      linkKey,
    };
  }
  if (problems.length > 0) throw new Error(`notification channels are misconfigured: ${problems.join('; ')}`);
  return out;
}
