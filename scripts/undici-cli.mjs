/**
 * The part of undici the CLI uses, `Agent` and `request`, for its bundle (scripts/bundle-cli.mjs
 * puts this module where `undici` is imported): undici's index also loads fetch, WebSocket,
 * cookies, the proxies and the mocks, some 60 ms of the CPU of every command that makes requests.
 * It is resolved against the undici installed when the CLI is bundled, so a later undici cannot
 * move these files under a built CLI; the SDK, left unbundled, imports undici itself.
 */
import { URL } from 'node:url';
import Agent from 'undici/lib/dispatcher/agent.js';
import Dispatcher from 'undici/lib/dispatcher/dispatcher.js';
import api from 'undici/lib/api/index.js';
import util from 'undici/lib/core/util.js';
import errors from 'undici/lib/core/errors.js';
import global from 'undici/lib/global.js';

// What undici's index does: a dispatcher answers request(), stream() and the rest.
Object.assign(Dispatcher.prototype, api);

/** undici's `request(url, options)`, for a URL given whole (the only way the CLI calls it). */
function request(url, opts = {}) {
  if (typeof url !== 'string' && !(url instanceof URL)) throw new errors.InvalidArgumentError('invalid url');
  if (opts.path != null) throw new errors.InvalidArgumentError('the CLI gives request() a whole URL, without opts.path');
  if (opts.agent) throw new errors.InvalidArgumentError('unsupported opts.agent. Did you mean opts.client?');
  const parsed = util.parseURL(url);
  const dispatcher = opts.dispatcher ?? global.getGlobalDispatcher();
  return api.request.call(dispatcher, {
    ...opts,
    origin: parsed.origin,
    path: parsed.search ? `${parsed.pathname}${parsed.search}` : parsed.pathname,
    method: opts.method || (opts.body ? 'PUT' : 'GET'),
  });
}

export { Agent, Dispatcher, request };
