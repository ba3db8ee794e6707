/** The arguments of `wds-files legacy api|sheet`, shared by the commands (legacy.ts) and their work (legacy-api.ts, legacy-sheet.ts). */
import type { ConnectionArgs } from '../connection.js';
import type { TargetArgs } from '../target-options.js';
import type { RawCallArgs } from './api.js';

export interface LegacyArgs extends ConnectionArgs {
  'api-version'?: string;
}

export interface LegacyApiArgs extends LegacyArgs, RawCallArgs {
  'dry-run': boolean;
}

export interface LegacySheetArgs extends LegacyArgs, TargetArgs {
  'sheet-id': string;
  out: string;
  async: boolean;
  report?: string;
}
