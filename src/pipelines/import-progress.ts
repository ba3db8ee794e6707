/** How far an import is, as its `onProgress` sees it. */
export interface ImportProgress {
  /** `check`: reading and checking the files; `send`: sending the update requests. */
  stage: 'check' | 'send';
  /**
   * While checking, the files checked so far; once every file is checked, `total` (= `done`) is
   * the number ready to send; while sending, the files whose request has ended, of `total`.
   */
  done: number;
  /** Once every file is checked: the files to send. */
  total?: number;
  /** While sending: the bytes of the files whose request has ended. */
  bytes?: number;
  /** While sending: the bytes of every file to send. */
  totalBytes?: number;
  /** While sending: the update requests sent so far. */
  requests?: number;
  /** While sending: the fewest update requests the files need. */
  minimum?: number;
}
