// Scope: Cedar rules the end-to-end and conformance tests add to the demo policy. File names
// starting with `a-`/`b-` sort before wire_transfer.cedar, so their requestable denial is the one
// submitted. Reasons never name an approver: they reach statusMessage.

/** 77,777: a requestable rule whose request window is 6 seconds (expiry runs for real). */
export const QUICK_EXPIRY_POLICY = `
@id("test-quick-expiry")
@requestable("true")
@approver_group("treasury")
@request_ttl("PT6S")
@reason("Transfers of exactly 77,777 need a quick approval.")
forbid (principal, action == Countersign::Action::"tools/call", resource == Countersign::Tool::"wire_transfer")
when { context.arguments.amount == decimal("77777.0000") }
unless { context has approval && context.approval.state == "approved" };
`;

/** 88,888: a requestable rule that needs a justification before the task (MRTR). */
export const JUSTIFY_POLICY = `
@id("test-justify")
@requestable("true")
@approver_group("treasury")
@request_ttl("P1D")
@reason("Transfers of 88,888 need a justified treasury approval.")
@submission_input("justification")
forbid (principal, action == Countersign::Action::"tools/call", resource == Countersign::Tool::"wire_transfer")
when { context.arguments.amount == decimal("88888.0000") }
unless { context has approval && context.approval.state == "approved" };
`;

/**
 * 66,666: after a first approval (by anyone but carol), a further, justified approval is needed,
 * which the task asks for in-task (input_required, answered by tasks/update).
 */
export const SECOND_APPROVAL_POLICY = `
@id("test-second-approval")
@requestable("true")
@approver_group("treasury")
@request_ttl("P1D")
@reason("Transfers of 66,666 need a second, justified treasury approval.")
@submission_input("justification")
forbid (principal, action == Countersign::Action::"tools/call", resource == Countersign::Tool::"wire_transfer")
when { context.arguments.amount == decimal("66666.0000") && context has approval && !context.approval.approvers.contains("carol") };
`;
