// Scope: configuration of the Slack and email channels: the key=value list variables parsed by
// src/config.ts (ApprovalsSettingsSchema), and channelOptionsFromConfig switching each channel on and naming what is missing.
import { describe, expect, it } from 'vitest';
import { channelOptionsFromConfig } from '../src/notify/channel-wiring.js';
import { ApprovalsConfigError as ConfigError, loadApprovalsSettings as loadConfig } from '../src/config.js';

const issuesOf = (env: Record<string, string>): string[] => {
  try {
    loadConfig(env);
  } catch (err) {
    if (err instanceof ConfigError) return err.issues;
    throw err;
  }
  return [];
};

describe('channel configuration', () => {
  it('group=channel and user=approver lists become maps, blanks ignored', () => {
    const config = loadConfig({
      COUNTERSIGN_SLACK_CHANNELS: ' treasury=C0123 , change-advisory=C0456,',
      COUNTERSIGN_SLACK_USERS: 'U01ABC=bob',
      COUNTERSIGN_EMAIL_ADDRESSES: 'bob=bob@example.com,carol=carol@example.com',
    });
    expect(config.COUNTERSIGN_SLACK_CHANNELS).toEqual({ treasury: 'C0123', 'change-advisory': 'C0456' });
    expect(config.COUNTERSIGN_SLACK_USERS).toEqual({ U01ABC: 'bob' });
    expect(config.COUNTERSIGN_EMAIL_ADDRESSES).toEqual({ bob: 'bob@example.com', carol: 'carol@example.com' });
  });

  it('an entry without "=", with an empty side, or a repeated key is a configuration error naming the variable', () => {
    expect(issuesOf({ COUNTERSIGN_SLACK_CHANNELS: 'treasury' })).toEqual([
      'COUNTERSIGN_SLACK_CHANNELS: entries must be group=channel id; "treasury" is not',
    ]);
    expect(issuesOf({ COUNTERSIGN_SLACK_USERS: 'U01=' })[0]).toContain('COUNTERSIGN_SLACK_USERS');
    expect(issuesOf({ COUNTERSIGN_EMAIL_ADDRESSES: 'bob=a@x,bob=b@x' })).toEqual(['COUNTERSIGN_EMAIL_ADDRESSES: "bob" is listed twice']);
  });

  it('an SMTP URL that is not smtp:// or smtps:// is refused', () => {
    expect(issuesOf({ COUNTERSIGN_SMTP_URL: 'http://mail.example.com' })).toEqual([
      'COUNTERSIGN_SMTP_URL: must be an smtp:// or smtps:// URL',
    ]);
  });

  it('without a bot token or an SMTP URL both channels are off', () => {
    expect(channelOptionsFromConfig(loadConfig({}), { emailLinkKey: 'k' })).toEqual({});
  });

  it('a bot token without a signing secret or channels, and an SMTP URL without addresses or link key, name every missing setting', () => {
    const config = loadConfig({ COUNTERSIGN_SLACK_BOT_TOKEN: 'xoxb-1', COUNTERSIGN_SMTP_URL: 'smtp://127.0.0.1:2525' });
    expect(() => channelOptionsFromConfig(config, {})).toThrow(
      'notification channels are misconfigured: COUNTERSIGN_SLACK_SIGNING_SECRET is required with COUNTERSIGN_SLACK_BOT_TOKEN; COUNTERSIGN_SLACK_CHANNELS (group=channel id, …) is required with COUNTERSIGN_SLACK_BOT_TOKEN; COUNTERSIGN_EMAIL_ADDRESSES (approver id=address, …) is required with COUNTERSIGN_SMTP_URL; secrets.json has no emailLinkKey (start once with this version to add it)',
    );
  });

  it('complete settings switch both channels on with the link lifetime and the secret link key', () => {
    const config = loadConfig({
      COUNTERSIGN_SLACK_BOT_TOKEN: 'xoxb-1',
      COUNTERSIGN_SLACK_SIGNING_SECRET: 'sig',
      COUNTERSIGN_SLACK_CHANNELS: 'treasury=C0123',
      COUNTERSIGN_SMTP_URL: 'smtps://mail.example.com:465',
      COUNTERSIGN_EMAIL_ADDRESSES: 'bob=bob@example.com',
      COUNTERSIGN_EMAIL_LINK_TTL_MS: '600000',
    });
    const options = channelOptionsFromConfig(config, { emailLinkKey: 'link-key' });
    expect(options.slack).toMatchObject({
      botToken: 'xoxb-1',
      signingSecret: 'sig',
      apiUrl: 'https://slack.com/api/',
      channels: { treasury: 'C0123' },
    });
    expect(options.email).toMatchObject({ smtpUrl: 'smtps://mail.example.com:465', linkTtlMs: 600_000, linkKey: 'link-key' });
  });
});
