/**
 * `npm start`: the newcomer's first command. Starts the emulator with the sample company and
 * prints its address and credentials; the export pipelines (issue 4) extend it to run the main job.
 * If the real time falls in the 01:00-01:30 maintenance window of Japan time, the service clock
 * starts at 01:30 so that the first run is not refused.
 */
import { startEmulator } from '../emulator/index.js';
import { Clock } from '../emulator/clock.js';
import { SAMPLE_COMPANY_DIR } from './paths.js';
import { MAINTENANCE_WINDOW } from '../spec/limits.js';
import { DEFAULT_CONSUMER_KEY, DEFAULT_CONSUMER_SECRET } from '../emulator/config.js';

const clock = new Clock();
const minute = clock.minuteOfDay();
const inWindow = minute >= MAINTENANCE_WINDOW.startMinute && minute < MAINTENANCE_WINDOW.endMinute;
const clockStart = inWindow ? `${clock.formatDate()} 01:30:00` : undefined;

const port = Number(process.env.PORT ?? 8787);
const running = await startEmulator({ port, seed: SAMPLE_COMPANY_DIR, clockStart });
const state = running.emulator.company()!;
const members = Object.keys(state.data.members).length;
const photos = Object.keys(state.data.photos).length;
const sheets = Object.keys(state.data.sheets).length;

console.log(`wds-files: the Workforce Data Service emulator is running with the sample company.

  Base URL         ${running.url}
  API              ${running.url}/api/v2.0
  Consumer key     ${DEFAULT_CONSUMER_KEY}
  Consumer secret  ${DEFAULT_CONSUMER_SECRET}
  Service clock    ${running.emulator.clock.format()} (${running.emulator.clock.timeZone})${inWindow ? ' (moved past the 01:00-01:30 maintenance window)' : ''}
  Company          ${members} members, ${photos} face photos, ${sheets} sheets

Try it from another terminal:
  export WDS_BASE_URL=${running.url} WDS_CONSUMER_KEY=${DEFAULT_CONSUMER_KEY} WDS_CONSUMER_SECRET=${DEFAULT_CONSUMER_SECRET}
  npm run --silent wds -- api GET /members/face_image
  curl -s ${running.url}/_emulator/state | head -c 400

Press Ctrl-C to stop.`);

const stop = async (): Promise<void> => {
  await running.close();
  process.exit(0);
};
process.once('SIGINT', () => void stop());
process.once('SIGTERM', () => void stop());
