/**
 * `npm run conformance -- …`: the SEP-2848 conformance kit's command line
 * (`@countersign/conformance`, packages/conformance; `countersign-conformance --help`), run from
 * this checkout's sources. Options, exit status and the hook contract: packages/conformance/TEST-HOOKS.md.
 */
import { conformanceMain } from '@countersign/conformance/cli';

process.exitCode = await conformanceMain(process.argv.slice(2));
