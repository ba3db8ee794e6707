/** What `wds-files --help` says beyond the commands: examples, the environment, the exit codes. */
import type { Argv } from 'yargs';

const ENVIRONMENT = `Environment:
  WDS_BASE_URL         the service's address (as --base-url); unset: the embedded emulator
  WDS_CONSUMER_KEY     the company's API consumer key (as --consumer-key)
  WDS_CONSUMER_SECRET  its consumer secret (as --consumer-secret; never printed)
  WDS_CLIENT_LIMITS    the client's own limit windows: off, or e.g. update=5/1m,request=3000/1h
  WDS_LEGACY_LIMITS    the same for the legacy commands: off, or e.g. request=60/1h,token=5/1h
  WDS_TOKEN_CACHE      off: issue a token every run rather than reuse the last one still valid
  NO_COLOR             any value: no colour on stderr (none either when stderr is not a terminal)
  WDS_TIMEZONE         the service's time zone for schedule's cron times (default Asia/Tokyo)
  XDG_STATE_HOME       import journals, schedule state, tokens kept (default ~/.local/state/wds-files)
  XDG_CACHE_HOME       the shared limit windows and the code cache (default ~/.cache/wds-files)
  WDS_CODE_CACHE       the code cache's folder, or off (default $XDG_CACHE_HOME/wds-files/code)`;

const EXIT_CODES = `Exit codes:
  0    everything succeeded
  1    a fatal error (credentials refused, disk full, another run holds the target)
  2    a usage error (a bad option or argument, nothing sent)
  3    finished, but some files were invalid, conflicting or failed (see --report)
  130  stopped by Ctrl-C (SIGINT) after ending the work in flight; run it again to continue
  143  stopped by SIGTERM, likewise (schedule exits 0 once its runs have ended)`;

export function withHelpText<T>(yargs: Argv<T>): Argv<T> {
  return yargs
    .example('$0 emulator', 'a local service with the sample company; prints the --base-url to use')
    .example('$0 photos export -o photos.zip --base-url http://127.0.0.1:8787', 'every face photo into a zip')
    .example('$0 attachments export -o out/attachments', 'every attachment into a folder')
    .example('$0 verify photos.zip', 'every file checked against the manifest')
    .example('$0 photos import photos/ --dry-run', 'check a folder of <code>.jpg and send nothing that changes')
    .example('$0 api GET /members', 'one raw API call with auth and limits')
    .example('$0 legacy sheet 0 --out members.csv', 'the base information of every member through the legacy interface, for Excel')
    .epilogue(`${ENVIRONMENT}\n\n${EXIT_CODES}`);
}
