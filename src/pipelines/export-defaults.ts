/**
 * The export's default concurrency and the rule that makes a target a zip, apart from the pipeline
 * so that the CLI's help and `verify` use them without loading the export's stages and HTTP client.
 */

/**
 * Downloads in flight by default. Attachments keep 16: documents run to megabytes, and more
 * connections gain little there and cost memory. Photos take PHOTO_EXPORT_CONCURRENCY, since many
 * connections hide the storage latency of small files; the figures are in bench/notes.md.
 */
export const DEFAULT_EXPORT_CONCURRENCY = 16;

/**
 * The default for photos, to a folder or a zip: it starts with fewer connections and opens more
 * only while answers come slowly (START_CONNECTIONS, LatencyWindow), which keeps a first wave of
 * large photos and a near storage within the memory bound.
 */
export const PHOTO_EXPORT_CONCURRENCY = 64;

/** An export to a path ending in .zip writes a zip; any other path is a folder. */
export const isZipTarget = (out: string): boolean => out.toLowerCase().endsWith('.zip');
