/** ManifestIndex lives with the sinks, which look up an earlier run's intact lines through it too. */
export { ManifestIndex } from '../sinks/manifest-index.js';
