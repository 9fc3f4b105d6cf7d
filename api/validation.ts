// Request validation: querystring/params are coerced from strings (that is how
// they arrive), bodies are not (a number sent as a string is a wrong type).
// Unknown fields are rejected, never silently removed.
import { Ajv, type Options } from 'ajv';
import addFormatsModule from 'ajv-formats';
import type { FastifySchemaCompiler } from 'fastify';
import { INSTANT_RULE, isCalendarDate, parseInstant } from '../core/instant.js';

// ajv-formats is CommonJS with a default export.
const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;

const base: Options = { allErrors: true, removeAdditional: false, useDefaults: true, strict: false };
// date-time and date are the project's own reading (core/instant.ts), not
// ajv-formats': a value the validator passes is one the handlers can parse.
const strictDates = (ajv: Ajv): Ajv =>
  ajv
    .addFormat('date-time', { type: 'string', validate: (s: string) => parseInstant(s) !== undefined })
    .addFormat('date', { type: 'string', validate: isCalendarDate });
const bodyAjv = strictDates(addFormats(new Ajv({ ...base, coerceTypes: false })));
const queryAjv = strictDates(addFormats(new Ajv({ ...base, coerceTypes: 'array' })));

export const validatorCompiler: FastifySchemaCompiler<unknown> = ({ schema, httpPart }) => {
  const ajv = httpPart === 'body' ? bodyAjv : queryAjv;
  return ajv.compile(schema as object) as ReturnType<FastifySchemaCompiler<unknown>>;
};

interface AjvIssue {
  instancePath: string;
  keyword: string;
  message?: string;
  params: Record<string, unknown>;
}

/** One readable line per problem, each naming the field: `body.key: is required`. */
export function describeValidation(issues: readonly AjvIssue[], context: string): string[] {
  const fieldOf = (issue: AjvIssue): string => [context, ...issue.instancePath.split('/').filter(Boolean)].join('.');
  // A union of literals (format, by, …) fails once per literal and once more as anyOf: one line naming the
  // allowed values instead (before: "must be equal to constant" three times, and never which).
  const allowed = new Map<string, string[]>();
  for (const issue of issues)
    if (issue.keyword === 'const') allowed.set(fieldOf(issue), [...(allowed.get(fieldOf(issue)) ?? []), String(issue.params.allowedValue)]);
  const said = new Set<string>();
  const lines = issues.map((issue): string | undefined => {
    const field = fieldOf(issue);
    const values = allowed.get(field);
    if (values && (issue.keyword === 'const' || issue.keyword === 'anyOf')) {
      if (said.has(field)) return undefined;
      said.add(field);
      return `${field}: must be one of ${values.join(', ')}`;
    }
    if (issue.keyword === 'required') return `${field}.${String(issue.params.missingProperty)}: is required`;
    if (issue.keyword === 'additionalProperties') return `${field}.${String(issue.params.additionalProperty)}: is not a known field`;
    if (issue.keyword === 'format' && issue.params.format === 'date-time') return `${field}: is not ${INSTANT_RULE}`;
    if (issue.keyword === 'format' && issue.params.format === 'date') return `${field}: is not a calendar date YYYY-MM-DD (years 1970–2299)`;
    if (issue.keyword === 'maxLength') return `${field}: is longer than ${String(issue.params.limit)} characters`;
    return `${field}: ${issue.message ?? 'is invalid'}`;
  });
  return lines.filter((l): l is string => l !== undefined);
}
