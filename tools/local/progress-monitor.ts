// Local mode's progress monitor: keeps the orders queue's depth fresh (the scheduler waits for a shallow
// queue before the next poller run) and reports a progress snapshot to the user at a fixed interval.

export interface ProgressMonitorOptions<Snapshot> {
  /** Reads the queue's depth (and stores it where the scheduler sees it). */
  refreshDepth: () => Promise<unknown>;
  depthIntervalMs?: number;
  onProgress?: (snapshot: Snapshot) => void;
  snapshot: () => Snapshot;
}

export interface ProgressMonitor {
  stop(): void;
}

export function startProgressMonitor<Snapshot>(options: ProgressMonitorOptions<Snapshot>): ProgressMonitor {
  let stopped = false;
  let depthTimer: NodeJS.Timeout | undefined;
  const watchDepth = () => {
    depthTimer = setTimeout(async () => {
      await options.refreshDepth().catch(() => undefined);
      if (!stopped) watchDepth();
    }, options.depthIntervalMs ?? 250);
  };
  watchDepth();
  const report = options.onProgress;
  const progressTimer = report ? setInterval(() => report(options.snapshot()), 2000) : undefined;
  return {
    stop() {
      stopped = true;
      clearTimeout(depthTimer);
      clearInterval(progressTimer);
    },
  };
}
