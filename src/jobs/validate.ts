/**
 * Payload validation: a kind's `validate` option is either a function or any
 * Standard Schema validator (Zod, Valibot, ArkType, ... expose `~standard`).
 * Enqueue rejects a payload that fails it; a stored payload that fails it at
 * run time is discarded, since it can never pass.
 *
 * @module
 */

/** The part of the Standard Schema v1 interface errand uses (see standardschema.dev). */
export interface StandardSchemaV1<Output = unknown> {
  /** The Standard Schema properties: the version, the vendor and `validate`. */
  readonly "~standard": {
    readonly version: 1;
    readonly vendor: string;
    readonly validate: (
      value: unknown,
    ) => StandardSchemaResult<Output> | Promise<StandardSchemaResult<Output>>;
  };
}

/** The result of a Standard Schema validation: a value, or issues. */
export type StandardSchemaResult<Output> =
  | { readonly value: Output; readonly issues?: undefined }
  | {
    readonly issues: ReadonlyArray<
      { readonly message: string; readonly path?: ReadonlyArray<PropertyKey | { readonly key: PropertyKey }> }
    >;
  };

/**
 * Checks a payload: a Standard Schema validator, or a function that throws
 * (or returns `false`, or a message string) when the payload is invalid.
 */
export type PayloadValidator<T> =
  | StandardSchemaV1<T>
  | ((payload: T) => boolean | string | void | Promise<boolean | string | void>);

/** A validator of any payload type, as a kind stores it (its payload type erased). */
export type AnyPayloadValidator = StandardSchemaV1<unknown> | ((payload: never) => unknown);

/**
 * Validates `payload`; resolves to null when it passes, or to a message
 * saying what is wrong.
 */
export async function checkPayload(validator: AnyPayloadValidator, payload: unknown): Promise<string | null> {
  if (typeof validator === "function") {
    try {
      const verdict = await (validator as (payload: unknown) => unknown)(payload);
      if (verdict === false) return "the validator returned false";
      if (typeof verdict === "string") return verdict;
      return null;
    } catch (err) {
      return err instanceof Error ? err.message : String(err);
    }
  }
  const result = await validator["~standard"].validate(payload);
  if (!result.issues) return null;
  return result.issues.map((issue) => {
    const path = (issue.path ?? []).map((p) => String(typeof p === "object" ? p.key : p)).join(".");
    return path ? `${path}: ${issue.message}` : issue.message;
  }).join("; ");
}

/** Whether `value` looks like a validator `job({ validate })` accepts. */
export function isPayloadValidator(value: unknown): value is AnyPayloadValidator {
  if (typeof value === "function") return true;
  const standard = (value as StandardSchemaV1 | null)?.["~standard"];
  return typeof standard === "object" && standard !== null && typeof standard.validate === "function";
}
