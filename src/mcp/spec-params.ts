/**
 * Params validation of spec methods, answered as JSON-RPC -32602 "Invalid params" on both protocol
 * faces (`server.ts`, `legacy-server.ts`) and in the conformance profile
 * (`conformance/profile/profile-server.ts`).
 *
 * Why a pre-check in `_wrapHandler` rather than the SDK's schema form
 * (`setRequestHandler(method, {params}, handler)`): the function form validates each request with
 * the wire codec of the era the instance serves (2026-07-28 or 2025-11-25), and on failure throws a
 * plain `Error`, which the SDK answers as -32603 with the zod issue dump as message. The schema form
 * answers -32602 but validates against one era-neutral schema, drops the era's wire schema and
 * registers the method as a custom-schema one, which changes how the SDK's era gate routes a spec
 * method the era lacks. The check here asks the same codec the same question the SDK is about
 * to ask, in the same order (`validateRequest`, then `validateInputRequest` when the era has no
 * request schema for the method), so it refuses exactly
 * what the SDK would refuse and nothing else: valid requests (MRTR `requestState`/`inputResponses`,
 * 2025-11-25 task augmentation `params.task`, `_meta`) reach the handler unchanged. Methods the
 * era has no schema for (the tasks extension's `tasks/get`, `tasks/cancel`, `tasks/update` on
 * 2026-07-28) are registered in the schema form with {@link ANY_PARAMS} and check their params with
 * {@link parseMethodParams}, which answers in the same form.
 *
 * A `params` that is not an object at all (`"x"`, `7`, `null`) never reaches a handler: the
 * transport refuses the message with HTTP 400 / -32600 (JSON-RPC 2.0 §4.2: params MUST be a
 * structured value).
 */
import { Server } from '@modelcontextprotocol/server';
import { z } from 'zod';
import { invalidRequestParams, type ParamsIssue } from './errors.js';
import { isJsonObject, isRecord } from './narrow.js';

type Handler = Parameters<Server['_wrapHandler']>[1];

/** Most issues reported in one error (the first is in the message, all in `data.issues`). */
const MAX_ISSUES = 5;

/**
 * The issues of a failed codec validation as `{path, message}`: `path` in the `$.params.cursor`
 * form, `message` the expectation without zod's "Invalid input: " prefix, never the offending value.
 * `dump` is the codec's `message`, the zod 4 `ZodError` message (its issues as JSON); anything else
 * gives one issue at `$.params` saying the params do not match the method's schema.
 */
export function paramsIssues(method: string, dump: string): ParamsIssue[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(dump);
  } catch {
    parsed = undefined;
  }
  return issuesOf(method, Array.isArray(parsed) ? parsed.filter(isZodIssue) : []);
}

/** Zod issues (paths from the request root, `["params","taskId"]`) as {@link ParamsIssue}s, at most {@link MAX_ISSUES}. */
function issuesOf(method: string, issues: ZodIssueLike[]): ParamsIssue[] {
  if (issues.length === 0) return [{ path: '$.params', message: `do not match the ${method} request schema` }];
  return issues.slice(0, MAX_ISSUES).map((i) => ({
    path: jsonPath(i.path),
    message: i.code === 'invalid_union' ? 'matches none of the allowed shapes' : i.message.replace(/^Invalid input: /, ''),
  }));
}

/**
 * The params of a method registered in the SDK's schema form (the tasks extension's `tasks/get`,
 * `tasks/cancel`, `tasks/update` on 2026-07-28, which the era's codec has no schema for), checked
 * against `schema` and refused like every other spec method: -32602 `Invalid params for <method>:
 * <path>: <expected>` with `data.issues` (`errors.ts` `invalidRequestParams`). Register the method
 * with {@link ANY_PARAMS} so the SDK's own check (whose message is a zod dump without `data`) never
 * refuses first.
 *
 * @param method the JSON-RPC method, for the message.
 * @param schema the method's params schema.
 * @param params the request's params as the SDK passes them to the handler.
 * @returns the parsed params.
 * @throws ProtocolError -32602 when `params` fails `schema`.
 */
export function parseMethodParams<T>(method: string, schema: z.ZodType<T>, params: unknown): T {
  const parsed = schema.safeParse(params);
  if (parsed.success) return parsed.data;
  const issues = parsed.error.issues.map((i) => ({
    code: i.code,
    message: i.message,
    path: ['params', ...i.path.map((k) => (typeof k === 'symbol' ? String(k) : k))],
  }));
  throw invalidRequestParams(method, issuesOf(method, issues));
}

/** A params schema that accepts any object: the SDK schema-form registration for methods checked by {@link parseMethodParams}. */
export const ANY_PARAMS = { params: z.looseObject({}) };

interface ZodIssueLike {
  code: string;
  /** Keys and indexes from the request root; as parsed from the codec's JSON, so not checked further. */
  path: unknown[];
  message: string;
}

function isZodIssue(v: unknown): v is ZodIssueLike {
  return isRecord(v) && typeof v.code === 'string' && typeof v.message === 'string' && Array.isArray(v.path);
}

/** `["params","cursor"]` → `$.params.cursor`; `["params","a",0]` → `$.params.a[0]`. */
function jsonPath(path: unknown[]): string {
  return path.reduce<string>((acc, seg) => (typeof seg === 'number' ? `${acc}[${seg}]` : `${acc}.${String(seg)}`), '$');
}

/** JSON kind of `v` in the words of the codec's messages (`null`, `array`, `object`, `string`, `number`, `boolean`). */
function jsonKind(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  return typeof v;
}

/**
 * The -32602 issue of a request whose MRTR `params.inputResponses` is present but not an object
 * (SEP-2322 multi-round-trip requests: a map of input keys to responses), or undefined. The SDK
 * lifts `inputResponses` out of the params before any schema sees them and reads a non-object as
 * "no responses", so the check runs on the parsed body (`http.ts`). `message` is one parsed JSON-RPC
 * message; anything that is not a request with object params passes (the SDK answers it).
 */
export function retryFieldIssue(message: unknown): { method: string; issue: ParamsIssue } | undefined {
  if (!isRecord(message) || typeof message.method !== 'string' || message.id === undefined) return undefined;
  const params = message.params;
  if (!isJsonObject(params) || !('inputResponses' in params)) return undefined;
  const kind = jsonKind(params.inputResponses);
  if (kind === 'object') return undefined;
  return { method: message.method, issue: { path: '$.params.inputResponses', message: `expected object, received ${kind}` } };
}

/**
 * `Server` whose spec-method requests with params failing the served era's wire schema are answered
 * -32602 `Invalid params for <method>: <path>: <expected>` with `data.issues` (`errors.ts`
 * `invalidRequestParams`), before the SDK's own validation (which would answer -32603, or -32602
 * with a zod dump for `tools/call`). Everything else behaves as `Server`. Both faces build on it.
 */
export class SpecParamsServer extends Server {
  protected override _wrapHandler(method: string, handler: Handler): Handler {
    const wrapped = super._wrapHandler(method, handler);
    return async (request, ctx) => {
      const codec = this._wireCodec();
      let outcome = codec.validateRequest(method, request);
      if (!outcome.ok && outcome.reason === 'not-in-era') outcome = codec.validateInputRequest(method, request);
      if (!outcome.ok && outcome.reason === 'invalid') throw invalidRequestParams(method, paramsIssues(method, outcome.message));
      return wrapped(request, ctx);
    };
  }
}
