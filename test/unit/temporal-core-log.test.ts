import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { temporalCoreLogging } from '../../src/stack-roles.js';

describe('COUNTERSIGN_TEMPORAL_CORE_LOG', () => {
  it('a bare level sets the SDK core crates to it and lets the SDK logger print it', () => {
    const debug = temporalCoreLogging('debug');
    expect(debug.filter).toContain('temporalio_sdk_core=DEBUG');
    expect(debug.loggerLevel).toBe('DEBUG');
    const quiet = temporalCoreLogging('WARN');
    expect(quiet.filter).toContain('temporalio_sdk_core=WARN');
    expect(quiet.loggerLevel).toBe('WARN');
  });

  it('a filter string is used as it is, and its most verbose level becomes the logger level', () => {
    const f = 'WARN,temporalio_sdk_core::worker::workflow=DEBUG,temporalio_sdk_core::worker::workflow::machines=WARN';
    expect(temporalCoreLogging(f)).toEqual({ filter: f, loggerLevel: 'DEBUG' });
  });

  it('an unknown level word means WARN', () => {
    expect(temporalCoreLogging('chatty').loggerLevel).toBe('WARN');
    expect(temporalCoreLogging('chatty').filter).toContain('temporalio_sdk_core=WARN');
  });

  it('the setting defaults to WARN and refuses anything that is not a level or a filter of known levels (a typo is an error, not WARN)', () => {
    expect(loadConfig({}).COUNTERSIGN_TEMPORAL_CORE_LOG).toBe('WARN');
    for (const bad of ['DEBUG; rm -rf /', 'DEBGU', 'OFF', 'temporalio_sdk_core', 'WARN,temporalio_sdk_core=LOUD', 'WARN,,DEBUG']) {
      expect(() => loadConfig({ COUNTERSIGN_TEMPORAL_CORE_LOG: bad }), bad).toThrow(/COUNTERSIGN_TEMPORAL_CORE_LOG/);
    }
    for (const good of ['debug', 'WARN,temporalio_sdk_core::worker::workflow=DEBUG,temporalio_sdk_core::worker::workflow::machines=WARN']) {
      expect(loadConfig({ COUNTERSIGN_TEMPORAL_CORE_LOG: good }).COUNTERSIGN_TEMPORAL_CORE_LOG).toBe(good);
    }
  });
});
