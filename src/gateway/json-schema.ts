/**
 * Argument validation for upstream tools: the upstream's JSON Schema, compiled with ajv, wrapped
 * as a zod schema so the gate and the execute activity validate upstream and native tools the same
 * way (a failure is -32602 with `{path, message}` per problem, `src/mcp/errors.ts`).
 *
 * Dialect: the schema's `$schema`, default 2020-12 (MCP's default dialect); draft-07 (and older
 * drafts, read as draft-07) and 2019-09 are accepted too, since many servers still emit draft-07.
 * Formats are checked (ajv-formats); unknown keywords are ignored (`strict: false`).
 *
 * Deliberately does not coerce, apply defaults or remove properties: the arguments validated are
 * exactly the arguments bound, decided on and sent upstream.
 */
import Ajv2019Module from 'ajv/dist/2019.js';
import Ajv2020Module from 'ajv/dist/2020.js';
import AjvModule, { type ErrorObject, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { z } from 'zod';
import { canonicalJson } from '../binding/call-binding.js';

// ajv and ajv-formats are CommonJS whose typings declare a default export; take whichever shape loads.
type Ctor = new (opts: Record<string, unknown>) => { compile(schema: object): ValidateFunction };
const interop = <T>(m: unknown): T => ((m as { default?: unknown }).default ?? m) as T;
const Ajv07 = interop<Ctor>(AjvModule);
const Ajv2019 = interop<Ctor>(Ajv2019Module);
const Ajv2020 = interop<Ctor>(Ajv2020Module);
const addFormats = interop<(ajv: unknown) => void>(addFormatsModule);

/** The schema cannot be compiled (unknown `$schema`, invalid schema, unresolvable `$ref`). */
export class JsonSchemaError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'JsonSchemaError';
  }
}

function make(C: Ctor) {
  const ajv = new C({ strict: false, allErrors: true, validateFormats: true });
  addFormats(ajv);
  return ajv;
}

// ajv keeps every compiled schema object; the gateway re-lists upstreams every 30 s, so compile each
// distinct schema once and reuse it (the map grows only with schemas an upstream really changed to).
const compiled = new Map<string, ValidateFunction>();

const instances = { '2020': make(Ajv2020), '2019': make(Ajv2019), '07': make(Ajv07) };

function instanceFor(schema: Record<string, unknown>) {
  const dialect = schema.$schema;
  if (dialect === undefined || (typeof dialect === 'string' && /json-schema\.org\/draft\/2020-12\/schema/.test(dialect)))
    return instances['2020'];
  if (typeof dialect === 'string' && /json-schema\.org\/draft\/2019-09\/schema/.test(dialect)) return instances['2019'];
  if (typeof dialect === 'string' && /json-schema\.org\/draft-0[4-7]\/schema/.test(dialect)) return instances['07'];
  throw new JsonSchemaError(`unsupported $schema ${JSON.stringify(dialect)}`);
}

function issueOf(e: ErrorObject): { path: string[]; message: string } {
  const path = e.instancePath
    .split('/')
    .slice(1)
    .map((p) => p.replaceAll('~1', '/').replaceAll('~0', '~'));
  if (e.keyword === 'required') path.push(String((e.params as { missingProperty?: unknown }).missingProperty));
  if (e.keyword === 'additionalProperties') path.push(String((e.params as { additionalProperty?: unknown }).additionalProperty));
  return { path, message: e.message ?? `fails ${e.keyword}` };
}

/**
 * A zod schema that accepts an arguments object exactly when `schema` (JSON Schema) does; each ajv
 * error becomes one zod issue at its instance path. Throws `JsonSchemaError` when the schema
 * cannot be compiled (that includes schemas JCS cannot canonicalize). The `$id` is dropped before
 * compiling, so two upstreams may reuse one; identical schemas share one compiled validator.
 */
export function zodFromJsonSchema(schema: Record<string, unknown>): z.ZodType<Record<string, unknown>> {
  let validate: ValidateFunction;
  const { $id: _id, ...rest } = schema;
  try {
    const key = canonicalJson(rest);
    validate = compiled.get(key) ?? instanceFor(schema).compile(rest);
    compiled.set(key, validate);
  } catch (err) {
    if (err instanceof JsonSchemaError) throw err;
    throw new JsonSchemaError(`invalid input schema: ${(err as Error).message}`);
  }
  return z.record(z.string(), z.unknown()).superRefine((value, ctx) => {
    if (validate(value)) return;
    for (const e of validate.errors ?? []) {
      const { path, message } = issueOf(e);
      ctx.addIssue({ code: 'custom', path, message });
    }
  });
}
