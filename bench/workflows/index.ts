// Scope: the bench baselines' worker bundle entry (raw Update-with-Start, same-shape task
// creation, signal-then-query).
export { emptyWorkflow } from './empty.js';
export { shapeApprovalWorkflow, shapeLimiterWorkflow } from './shaped.js';
export { shapedDecisionWorkflow, signalWorkflow } from './signal.js';
