/**
 * pg-boss's start in the fleet (src/fleet/queue.ts) against a real PostgreSQL: workers and `fleet
 * run` started together on a new database, as a fleet's first deployment starts them, each make
 * or find pg-boss's schema. Each FleetDatabase is a pool of its own, as each process has.
 */
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { FleetDatabase, migrate } from '../../src/fleet/database.js';
import { fleetTiming, startBoss } from '../../src/fleet/queue.js';
import { usePostgres } from '../helpers/postgres.js';

const db = usePostgres();

describe('pg-boss started by several processes at once', () => {
  it('three workers and a fleet run starting together on a new database all start; pg-boss\'s schema is made once', async () => {
    // Each round a new database: the race is in making the schema, which happens once a database.
    for (let round = 0; round < 3; round += 1) {
      const admin = new pg.Client({ connectionString: db.url });
      await admin.connect();
      await admin.query(`CREATE DATABASE fresh${round}`);
      await admin.end();
      const url = db.url.replace(/\/wds$/, `/fresh${round}`);
      const roles = ['worker', 'worker', 'worker', 'client'] as const;
      const started = await Promise.allSettled(roles.map(async (role) => {
        // The pools the worker and `fleet run` open (src/fleet/worker.ts, src/cli/commands/fleet.ts).
        const pool = new FleetDatabase(url, () => undefined, { max: role === 'worker' ? 7 : 2 });
        try {
          await migrate(pool);
          const boss = await startBoss(pool, fleetTiming({}), role, () => undefined);
          await boss.stop({ graceful: false, close: false, wait: true });
        } finally {
          await pool.close();
        }
      }));
      expect(started.map((s) => (s.status === 'rejected' ? String((s.reason as Error).message) : 'started')), `round ${round}`).toEqual(roles.map(() => 'started'));
      const check = new pg.Client({ connectionString: url });
      await check.connect();
      try {
        expect((await check.query('SELECT version FROM pgboss.version')).rows).toHaveLength(1);
        expect((await check.query(`SELECT name, policy FROM pgboss.queue WHERE name = 'wds-fleet-runs'`)).rows).toEqual([{ name: 'wds-fleet-runs', policy: 'stately' }]);
      } finally {
        await check.end();
      }
    }
  }, 180_000);
});
