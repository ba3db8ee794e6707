/**
 * Imported first by the checker's process (photo-check-child.ts), before sharp loads: SIGINT and
 * SIGTERM sent to every process at once (a service manager stopping the whole group) do not end
 * the checker, even while it starts. The import decides when checking stops: the file in hand is
 * finished and answered, and the closed channel ends this process, also when the import was killed.
 */
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => undefined);
