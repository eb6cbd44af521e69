// Scope: per-process memory (VmRSS / VmHWM from /proc/<pid>/status), a sampler that keeps the
// peak of each watched process, and the machine description printed with every report.
import { readFileSync, readdirSync } from 'node:fs';
import os from 'node:os';
import { round } from './stats.js';

export interface MachineInfo {
  cores: number;
  cpuModel: string;
  totalMemoryMiB: number;
  platform: string;
  node: string;
  /** 1-minute load average when the run started and when it ended (other work on the machine). */
  loadAvgStart: number;
  loadAvgEnd?: number;
}

export function machineInfo(): MachineInfo {
  return {
    cores: os.cpus().length,
    cpuModel: os.cpus()[0]?.model ?? 'unknown',
    totalMemoryMiB: Math.round(os.totalmem() / 2 ** 20),
    platform: `${os.platform()} ${os.release()}`,
    node: process.version,
    loadAvgStart: round(os.loadavg()[0]!, 2),
  };
}

/** `{ rssMiB, hwmMiB }` of a process, or null when it is gone or /proc is unavailable. */
export function memOf(pid: number): { rssMiB: number; hwmMiB: number } | null {
  try {
    const s = readFileSync(`/proc/${pid}/status`, 'utf8');
    const rss = /VmRSS:\s+(\d+) kB/.exec(s);
    const hwm = /VmHWM:\s+(\d+) kB/.exec(s);
    if (!rss || !hwm) return null;
    return { rssMiB: round(Number(rss[1]) / 1024, 1), hwmMiB: round(Number(hwm[1]) / 1024, 1) };
  } catch {
    return null;
  }
}

/** PID of a child of this process whose command line contains `needle` (e.g. the Temporal CLI). */
export function childPid(needle: string): number | null {
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid !== process.pid) continue;
      if (readFileSync(`/proc/${d}/cmdline`, 'utf8').includes(needle)) return Number(d);
    } catch {
      // gone or unreadable
    }
  }
  return null;
}

/** CPU time (user + system) a process has used so far, ms; null when it is gone. */
export function cpuMsOf(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // fields 14 and 15 of stat (utime, stime) are at 11 and 12 after the command; clock ticks of 10 ms
    return (Number(f[11]) + Number(f[12])) * 10;
  } catch {
    return null;
  }
}

/** Samples the RSS of named processes every `everyMs`, keeping each one's peak (MiB). */
export class RssSampler {
  private readonly pids = new Map<string, number>();
  readonly peakMiB: Record<string, number> = {};
  private readonly timer: NodeJS.Timeout;

  constructor(everyMs = 200) {
    this.timer = setInterval(() => this.sample(), everyMs);
    this.timer.unref();
  }

  watch(name: string, pid: number): void {
    this.pids.set(name, pid);
    this.sample();
  }

  sample(): void {
    for (const [name, pid] of this.pids) {
      const m = pid === process.pid ? { rssMiB: round(process.memoryUsage().rss / 2 ** 20, 1), hwmMiB: 0 } : memOf(pid);
      if (m) this.peakMiB[name] = Math.max(this.peakMiB[name] ?? 0, m.rssMiB, m.hwmMiB);
    }
  }

  /** Current RSS of a watched process (MiB), null if gone. */
  rssOf(name: string): number | null {
    const pid = this.pids.get(name);
    if (pid === undefined) return null;
    if (pid === process.pid) return round(process.memoryUsage().rss / 2 ** 20, 1);
    return memOf(pid)?.rssMiB ?? null;
  }

  /** CPU ms used so far by each watched process. */
  cpuMs(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const [name, pid] of this.pids) {
      const v = pid === process.pid ? (process.cpuUsage().user + process.cpuUsage().system) / 1000 : cpuMsOf(pid);
      if (v !== null) out[name] = v;
    }
    return out;
  }

  stop(): void {
    this.sample();
    clearInterval(this.timer);
  }
}
