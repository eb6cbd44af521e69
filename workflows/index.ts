/**
 * The workflow module the worker bundles (Temporal takes one `workflowsPath`): re-exports each
 * workflow, one workflow per file. The only re-export module in the project, because the bundler
 * needs a single entry; everything else imports the defining file directly.
 */
export { approvalWorkflow } from './approval.js';
export { submissionLimiterWorkflow } from './submission-limiter.js';
