/**
 * The stateless multi-round (SEP-2322 MRTR) fixtures of the conformance profile: the
 * `test_input_required_result_*` tools, the capability diagnostics of the stateless scenario,
 * and the `test_input_required_result_prompt` prompt.
 *
 * `requestState` is sealed with Countersign's own MRTR codec (`src/mcp/submission-input.ts`: HMAC,
 * bound to the method and the caller, 10-minute TTL), carrying a digest of tool + arguments and
 * the round; the SDK seam verifies it before a handler runs (tampered or expired: -32602), and a
 * retry whose tool or arguments differ is -32602 here, as in the approval gate.
 *
 * Missing or malformed responses are answered with a fresh `input_required` for what is still
 * missing (SEP-2322: re-request, do not fail); extra unknown keys are ignored. An input kind the
 * request did not declare in its client capabilities is never asked for: -32021 instead.
 */
import { acceptedContent, inputRequired, inputResponse, ProtocolError, type InputRequest } from '@modelcontextprotocol/server';
import { z } from 'zod';
import { jcsSha256 } from '../../src/binding/call-binding.js';
import { requestStateMismatch } from '../../src/mcp/errors.js';
import type { SubmissionState } from '../../src/mcp/submission-input.js';

/** The client capabilities a request declared (`_meta` `io.modelcontextprotocol/clientCapabilities`). */
export interface DeclaredCapabilities {
  elicitation?: unknown;
  sampling?: unknown;
  roots?: unknown;
  extensions?: Record<string, unknown>;
}

/** One MRTR round as the handler sees it. */
export interface MrtrRound {
  /** Tool or prompt name. */
  name: string;
  arguments: Record<string, unknown>;
  capabilities: DeclaredCapabilities;
  inputResponses: Record<string, unknown> | undefined;
  /** The verified `requestState` payload, when the request echoed one. */
  state: SubmissionState | undefined;
  /** Seal the state for the next round. */
  mint(state: SubmissionState): Promise<string>;
}

type Kind = 'elicitation' | 'sampling' | 'roots';

/** -32021 naming the missing client capability (SEP-2575 §Missing Required Capabilities). */
export function missingCapability(kind: Kind): ProtocolError {
  return new ProtocolError(-32021, `Missing required client capability: ${kind}`, { requiredCapabilities: { [kind]: {} } });
}

const NameSchema = z.object({ name: z.string().min(1) });
const OkSchema = z.object({ ok: z.boolean() });
const ContextSchema = z.object({ context: z.string() });
const ColorSchema = z.object({ color: z.string().min(1) });

const askName = (message = 'What is your name?') =>
  inputRequired.elicit({ message, requestedSchema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] } });
const askOk = () =>
  inputRequired.elicit({
    message: 'Please confirm',
    requestedSchema: { type: 'object', properties: { ok: { type: 'boolean' } }, required: ['ok'] },
  });
const askSampling = (text: string, maxTokens: number) =>
  inputRequired.createMessage({ messages: [{ role: 'user', content: { type: 'text', text } }], maxTokens });
const text = (t: string) => ({ content: [{ type: 'text', text: t }] });

/**
 * The MRTR phase of `test_tool_with_task` (SEP-2663 MRTR → task composition): `input_required`
 * for `user_name` (with a sealed `requestState`) until the retry carries an accepted answer, then
 * the name, which the caller promotes into the task.
 */
export async function gatherUserName(r: MrtrRound): Promise<{ name: string } | { inputRequired: Record<string, unknown> }> {
  const digest = jcsSha256({ tool: r.name, arguments: r.arguments });
  if (r.state && r.state.digest !== digest) throw requestStateMismatch();
  if (r.capabilities.elicitation === undefined) throw missingCapability('elicitation');
  const given = acceptedContent(r.inputResponses, 'user_name', NameSchema);
  if (given) return { name: given.name };
  const result = inputRequired({
    inputRequests: { user_name: askName() },
    requestState: await r.mint({ v: 1, digest, round: (r.state?.round ?? 0) + 1 }),
  });
  return { inputRequired: result as unknown as Record<string, unknown> };
}

/** Answer one round of an MRTR fixture tool (or the prompt, when `name` is the prompt's). */
export async function runMrtrFixture(r: MrtrRound): Promise<Record<string, unknown>> {
  const digest = jcsSha256({ tool: r.name, arguments: r.arguments });
  if (r.state && r.state.digest !== digest) throw requestStateMismatch();
  const round = r.state?.round ?? 0;
  const need = (kind: Kind) => {
    if (r.capabilities[kind] === undefined) throw missingCapability(kind);
  };
  const ask = async (inputRequests: Record<string, InputRequest>, withState: boolean, nextRound = round + 1) =>
    inputRequired({
      inputRequests,
      ...(withState ? { requestState: await r.mint({ v: 1, digest, round: nextRound }) } : {}),
    }) as unknown as Record<string, unknown>;
  const res = r.inputResponses;

  switch (r.name) {
    case 'test_input_required_result_elicitation': {
      need('elicitation');
      const given = acceptedContent(res, 'user_name', NameSchema);
      return given ? text(`Hello, ${given.name}!`) : ask({ user_name: askName() }, false);
    }
    case 'test_input_required_result_sampling': {
      need('sampling');
      const v = inputResponse(res, 'capital_question');
      if (v.kind === 'sampling') return text(`The client answered: ${JSON.stringify(v.result.content)}`);
      return ask({ capital_question: askSampling('What is the capital of France?', 100) }, false);
    }
    case 'test_input_required_result_list_roots': {
      need('roots');
      const v = inputResponse(res, 'client_roots');
      if (v.kind === 'roots') return text(`Roots: ${v.roots.map((x) => x.uri).join(', ') || '(none)'}`);
      return ask({ client_roots: inputRequired.listRoots() }, false);
    }
    case 'test_input_required_result_request_state':
    case 'test_input_required_result_tampered_state': {
      need('elicitation');
      const ok = acceptedContent(res, 'confirm', OkSchema);
      if (r.state && ok) return text(`state-ok: requestState verified (round ${r.state.round}), confirmed=${ok.ok}`);
      return ask({ confirm: askOk() }, true);
    }
    case 'test_input_required_result_multiple_inputs': {
      need('elicitation');
      need('sampling');
      need('roots');
      const name = acceptedContent(res, 'user_name', NameSchema);
      const greeting = inputResponse(res, 'greeting');
      const roots = inputResponse(res, 'client_roots');
      if (r.state && name && greeting.kind === 'sampling' && roots.kind === 'roots')
        return text(`All inputs received: ${name.name}, a greeting, ${roots.roots.length} root(s).`);
      // first round (no state): ask for everything; later: re-ask only what is still missing
      const missing: Record<string, InputRequest> = {};
      if (!r.state || !name) missing.user_name = askName();
      if (!r.state || greeting.kind !== 'sampling') missing.greeting = askSampling('Generate a greeting', 50);
      if (!r.state || roots.kind !== 'roots') missing.client_roots = inputRequired.listRoots();
      return ask(missing, true, 1);
    }
    case 'test_input_required_result_multi_round': {
      need('elicitation');
      if (round === 0) return ask({ step1: askName('Step 1: What is your name?') }, true, 1);
      if (round === 1) {
        if (!acceptedContent(res, 'step1', NameSchema)) return ask({ step1: askName('Step 1: What is your name?') }, true, 1);
        return ask(
          {
            step2: inputRequired.elicit({
              message: 'Step 2: What is your favorite color?',
              requestedSchema: { type: 'object', properties: { color: { type: 'string' } }, required: ['color'] },
            }),
          },
          true,
          2,
        );
      }
      const color = acceptedContent(res, 'step2', ColorSchema);
      if (!color)
        return ask(
          {
            step2: inputRequired.elicit({
              message: 'Step 2: What is your favorite color?',
              requestedSchema: { type: 'object', properties: { color: { type: 'string' } }, required: ['color'] },
            }),
          },
          true,
          2,
        );
      return text(`Done after ${round + 1} rounds; favorite color ${color.color}.`);
    }
    case 'test_input_required_result_capabilities': {
      const caps = r.capabilities;
      if (caps.sampling === undefined && caps.elicitation === undefined && caps.roots === undefined) throw missingCapability('sampling');
      const asked: Record<string, InputRequest> = {};
      if (caps.sampling !== undefined && inputResponse(res, 'summary').kind !== 'sampling')
        asked.summary = askSampling('Summarize the request', 50);
      if (caps.elicitation !== undefined && !acceptedContent(res, 'user_name', NameSchema)) asked.user_name = askName();
      if (caps.roots !== undefined && inputResponse(res, 'client_roots').kind !== 'roots') asked.client_roots = inputRequired.listRoots();
      return Object.keys(asked).length ? ask(asked, false) : text('Received every input this client can give.');
    }
    case 'test_missing_capability': {
      need('sampling');
      const v = inputResponse(res, 'probe');
      return v.kind === 'sampling' ? text('sampling answered') : ask({ probe: askSampling('Say anything', 10) }, false);
    }
    case 'test_streaming_elicitation': {
      need('elicitation');
      const given = acceptedContent(res, 'user_name', NameSchema);
      return given ? text(`Hello, ${given.name}!`) : ask({ user_name: askName() }, false);
    }
    case 'test_input_required_result_prompt': {
      need('elicitation');
      const given = acceptedContent(res, 'user_context', ContextSchema);
      if (given)
        return {
          description: 'A prompt built from the context the client gave',
          messages: [{ role: 'user', content: { type: 'text', text: `Use this context: ${given.context}` } }],
        };
      return ask(
        {
          user_context: inputRequired.elicit({
            message: 'What context should the prompt use?',
            requestedSchema: { type: 'object', properties: { context: { type: 'string' } }, required: ['context'] },
          }),
        },
        false,
      );
    }
    default:
      throw new ProtocolError(-32602, 'Invalid params: unknown tool');
  }
}
