/** How far an import is, as its `onProgress` sees it. */
export interface ImportProgress {
  /** `check`: reading and checking the files; `send`: sending the update requests. */
  stage: 'check' | 'send';
  /**
   * While checking, the files checked so far; once every file is checked, `total` (= `done`) is
   * the number ready to send; while sending, the files whose request has ended, of `total`.
   */
  done: number;
  total?: number;
  /** While sending: the bytes of the files whose request has ended, and of every file to send. */
  bytes?: number;
  totalBytes?: number;
  /** While sending: the update requests sent so far, and the fewest the files need. */
  requests?: number;
  minimum?: number;
}
