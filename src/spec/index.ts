export * from './limits.js';
export * from './extensions.js';
export * from './events.js';
export * from './time.js';
export * from './operations.js';
export * from './schemas.js';
