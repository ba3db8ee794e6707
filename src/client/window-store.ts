/**
 * Where the limiter keeps a company's windows when more than one process counts them: a file on
 * this machine (state-file.ts), or any shared store that implements this interface (the fleet
 * keeps them in PostgreSQL, src/fleet/limit-windows.ts). The client knows only the interface.
 */
export type WindowName = 'update' | 'request' | 'token';
/** The times (epoch milliseconds) of the requests counted in each window. */
export type WindowStamps = Record<WindowName, number[]>;

export function emptyStamps(): WindowStamps {
  return { update: [], request: [], token: [] };
}

/** One company's windows, changed by one caller at a time across every process that shares them. */
export interface WindowStore {
  /**
   * Runs `change` on the stamps while no other caller can change them, saves the stamps it returns
   * and answers its result. `meter.begin()` starts counting a wait for another caller; call what
   * it answers when the wait ends.
   */
  update<T>(change: (stamps: WindowStamps) => { stamps: WindowStamps; result: T }, meter?: { begin(): () => void }): Promise<T>;
}

/** The interface whose windows a store keeps: API v2's, or the legacy interface's (they count apart). */
export type WindowsOf = 'v2' | 'v1';

/** Hands out each company's store, by consumer key: what a caller with many companies passes around. */
export interface WindowStores {
  storeFor(consumerKey: string, api: WindowsOf): WindowStore;
}
