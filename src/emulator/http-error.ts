/** An answer that is not a success: status and the `{"errors": [...]}` body (wire-format.md). */
export class HttpError extends Error {
  readonly status: number;
  readonly errors: string[];
  readonly headers: Record<string, string>;

  constructor(status: number, errors: string | string[], headers: Record<string, string> = {}) {
    const list = Array.isArray(errors) ? errors : [errors];
    super(list.join('; '));
    this.name = 'HttpError';
    this.status = status;
    this.errors = list;
    this.headers = headers;
  }
}

export const badRequest = (errors: string | string[]): HttpError => new HttpError(400, errors);
export const notFound = (what: string): HttpError => new HttpError(404, `${what} was not found`);
