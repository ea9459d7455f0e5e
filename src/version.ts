// The version of this build of inplace-agent and inplacectl: the package's version.
import { readFileSync } from 'node:fs';

/** The package version (package.json), the same for the agent and inplacectl. */
export const PACKAGE_VERSION: string = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;
