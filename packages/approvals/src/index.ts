/**
 * `@countersign/approvals`: the reference approval service (an AuthZEN ARAP-shaped Access Request
 * Service) as a library — create it (`createApprovalService`, or `hostApprovalService` with the
 * options `approvalServiceOptions` derives from its settings) and serve `service.app.fetch`.
 * Its own command line is `countersign-approvals` (`./cli`); the ARAP wire it speaks is
 * `@countersign/arap`. Everything a host, an operator's tooling or a test needs is exported here;
 * the folders under `src/` are internal.
 */
export { createApprovalService, DEFAULT_APPROVAL_VALIDITY_MS, METRICS_SNAPSHOT_TTL_MS } from './service.js';
export type { ApprovalService, ApprovalServiceOptions } from './service.js';
export { approvalServiceOptions, hostApprovalService, APPROVALS_DB_FILE } from './host.js';
export type { HostedApprovalService } from './host.js';
export { generateApprovalMachineSecrets, readApprovalsSecrets } from './secrets.js';
export type { ApprovalMachineSecrets, ApprovalsSecrets } from './secrets.js';
export {
  ApprovalsConfigError,
  ApprovalsClientEnvSchema,
  ApprovalsServeConfigSchema,
  ApprovalsSettingsSchema,
  loadApprovalsClientEnv,
  loadApprovalsServeConfig,
  loadApprovalsSettings,
  OIDC_VARIABLES,
} from './config.js';
export type { ApprovalsClientEnv, ApprovalsServeConfig, ApprovalsSettings, OidcVariable } from './config.js';
export { APPROVAL_RULES_FILE, approvalServiceExtras } from './stack-wiring.js';
export { channelOptionsFromConfig } from './notify/channel-wiring.js';
export type { ChannelConfig } from './notify/channel-wiring.js';
export {
  ApprovalRulesError,
  ApprovalRulesSchema,
  DEFAULT_APPROVAL_RULES,
  loadApprovalRules,
  parseApprovalRules,
  writeDefaultApprovalRules,
} from './deciders/approval-rules.js';
export type { ApprovalRules } from './deciders/approval-rules.js';
export type { AgentCredential } from './deciders/decider.js';
export { ITSM_DECISION_ISSUER, ITSM_NOTIFICATION_AUDIENCE } from './deciders/itsm-webhook.js';
export { MAX_BODY_BYTES, MAX_SMALL_BODY_BYTES } from './api/arap-routes.js';
export { callbackRetryDelayMs, DEFAULT_CALLBACK_DELIVERY } from './api/callbacks.js';
export type { CallbackDeliveryPolicy } from './api/callbacks.js';
export { INBOX_LOGIN_BODY_BYTES } from './inbox/routes.js';
export { headline, summarizeArguments } from './inbox/format.js';
export {
  formatValue,
  labelledArgumentRows,
  requestedBy,
  requestHeadline,
  type LabelledArgumentRow,
  type PlainRequest,
} from './inbox/plain-language.js';
export type { ApprovalNotification, ApprovalNotifier, NotificationKind } from './notify/notifier.js';
export { SLACK_APPROVE_ACTION } from './notify/slack.js';
export { slackSignature } from './notify/slack-signature.js';
export { principalNames } from './principal-names.js';
export {
  CHANNEL_LABELS,
  DECISION_BUCKETS_SECONDS,
  MAX_LABEL_VALUES,
  OTHER_LABEL,
  OUTCOMES,
  PENDING_AGE_BUCKETS,
  READINGS,
} from './analytics.js';
export type { ApprovalMetricsSnapshot, DecisionSeries, LabelledValue } from './analytics.js';
