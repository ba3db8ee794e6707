/**
 * Runs a command and measures it as `/usr/bin/time` does: from the rusage that wait4 returns for
 * the ended child (Node gives no child's rusage). A small python3 parent forks, execs the command,
 * waits for it with os.wait4 and writes its wall time, maximum resident set, CPU times and exit
 * status as one JSON line on a pipe of its own (fd 3), leaving stdout and stderr to the command.
 *
 * The maximum resident set is the kernel's for the process: its own peak, or the peak of a child
 * it waited for when that was larger (as `/usr/bin/time -f %M` reports), never their sum.
 */
import { spawn } from 'node:child_process';

const PARENT = `
import json, os, signal, sys, time
# Ctrl-C reaches the measured command; the measurer itself stays to report it.
signal.signal(signal.SIGINT, signal.SIG_IGN)
started = time.monotonic()
pid = os.fork()
if pid == 0:
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    try:
        os.execvp(sys.argv[1], sys.argv[1:])
    except OSError as error:
        sys.stderr.write(f"{sys.argv[1]}: {error.strerror}\\n")
        os._exit(127)
_, status, usage = os.wait4(pid, 0)
report = {
    "ms": (time.monotonic() - started) * 1000,
    "max_rss_kb": usage.ru_maxrss,
    "user_s": usage.ru_utime,
    "system_s": usage.ru_stime,
    "code": os.WEXITSTATUS(status) if os.WIFEXITED(status) else None,
    "signal": os.WTERMSIG(status) if os.WIFSIGNALED(status) else None,
}
os.write(3, (json.dumps(report) + "\\n").encode())
`;

export interface Measured {
  code: number | null;
  /** The number of the signal that ended the command, if one did. */
  signal: number | null;
  stdout: string;
  stderr: string;
  /** Wall time from fork to the end of wait4. */
  ms: number;
  /** Maximum resident set, kB (ru_maxrss). */
  maxRssKb: number;
  userS: number;
  systemS: number;
}

export interface MeasureOptions {
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  /**
   * Runs the measurer in a process group of its own and hands over a function that signals the
   * group: the measurer ignores SIGINT, so `stop('SIGINT')` stops a server being measured cleanly.
   */
  onStart?: (stop: (signal: NodeJS.Signals) => void) => void;
  /** Each chunk of the command's stderr as it comes, for a caller waiting on a server's log line. */
  onStderr?: (chunk: string) => void;
}

/** Runs `command args` to its end and answers what it printed and what it cost. */
export function measure(command: string, args: string[], options: MeasureOptions = {}): Promise<Measured> {
  return new Promise((resolve, reject) => {
    const child = spawn('python3', ['-c', PARENT, command, ...args], { cwd: options.cwd, env: options.env, stdio: ['ignore', 'pipe', 'pipe', 'pipe'], detached: options.onStart !== undefined });
    if (options.onStart) options.onStart((signal) => process.kill(-child.pid!, signal));
    let stdout = '';
    let stderr = '';
    let report = '';
    child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr!.on('data', (d: Buffer) => {
      stderr += d.toString();
      options.onStderr?.(d.toString());
    });
    child.stdio[3]!.on('data', (d: Buffer) => (report += d.toString()));
    child.once('error', (error) => reject(new Error(`python3, which measures the command, could not start: ${error.message}`)));
    child.once('close', (code) => {
      if (!report.trim()) {
        reject(new Error(`measuring ${command} failed (python3 exited with ${code}):\n${stderr}`));
        return;
      }
      const r = JSON.parse(report) as { ms: number; max_rss_kb: number; user_s: number; system_s: number; code: number | null; signal: number | null };
      resolve({ code: r.code, signal: r.signal, stdout, stderr, ms: r.ms, maxRssKb: r.max_rss_kb, userS: r.user_s, systemS: r.system_s });
    });
  });
}
