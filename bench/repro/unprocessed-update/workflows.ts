/**
 * The workflow of the unprocessed-update reproduction (README.md beside it): a counter that
 * accepts `bump` updates (a synchronous handler behind a validator, like many real ones), wakes on
 * a timer every `tickMs` (and, with `withActivity`, on a bump, to run an activity) so that the run also gets workflow tasks that carry no update, and ends on
 * the `stop` signal. Nothing Countersign-specific.
 */
import { condition, defineSignal, defineUpdate, proxyActivities, setHandler } from '@temporalio/workflow';
import type * as activities from './activities.js';

const { echo } = proxyActivities<typeof activities>({ startToCloseTimeout: '30s' });

export const bumpUpdate = defineUpdate<number, [number]>('bump');
export const stopSignal = defineSignal('stop');

/**
 * `tickMs`: the timer between wake-ups; `withActivity`: after each wake-up that saw new bumps, run
 * one activity (as a workflow that reacts to an update by fetching something would).
 */
export async function counter(tickMs: number, withActivity = false): Promise<number> {
  let n = 0;
  let seen = 0;
  let done = false;
  setHandler(
    bumpUpdate,
    (by) => {
      n += by;
      return n;
    },
    {
      validator: (by) => {
        if (by <= 0) throw new Error('bump by a positive number');
      },
    },
  );
  setHandler(stopSignal, () => {
    done = true;
  });
  while (!done) {
    await condition(() => done || (withActivity && n !== seen), tickMs);
    if (withActivity && n !== seen) {
      seen = n;
      await echo(n);
    }
  }
  return n;
}
