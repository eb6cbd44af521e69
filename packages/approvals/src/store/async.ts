/**
 * The bridge from the synchronous better-sqlite3 implementation to the store's asynchronous
 * interfaces (`store.ts` and its parts): every method of a store interface returns a `Promise`, so
 * that another implementation (a network database, where each operation is a round trip) can serve
 * the same interface. The SQLite implementation keeps its synchronous code, each operation in the
 * single transaction it had; {@link asyncOf} wraps it.
 * Deliberately does not: defer the work (a wrapped call runs to completion before it returns its
 * settled promise, so SQLite still applies operations in call order), or offer a transaction
 * across calls (an operation that must be atomic is one method of the store).
 */

/**
 * The synchronous implementation of store interface `T`: each method returning `Promise<R>` in `T`
 * returns `R`; other members (sub-stores) are as in `T`.
 */
export type Sync<T> = { [K in keyof T]: T[K] extends (...args: infer A) => Promise<infer R> ? (...args: A) => R : T[K] };

/**
 * `impl` as the asynchronous interface `T`: each method runs `impl`'s at once and returns a promise
 * of its result (rejected with what it threw); other members are passed through.
 */
export function asyncOf<T extends object>(impl: Sync<T>): T {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(impl)) {
    const fn = value as unknown;
    out[key] =
      typeof fn === 'function' ? async (...args: unknown[]): Promise<unknown> => (fn as (...a: unknown[]) => unknown)(...args) : fn;
  }
  return out as T;
}
