/**
 * yaml's `parse`, for modules that load it only when they need it. They import this module rather
 * than the package: the CLI's bundle (scripts/bundle-cli.mjs) gives a CommonJS package imported
 * lazily only a default export, and yaml is CommonJS under Node.
 */
export { parse } from 'yaml';
