// Repeats an async task: runs it now, then `interval` ms after each run has finished. Waiting
// for the previous run (instead of setInterval) keeps a slow server from piling up requests.
// The task handles its own errors; a rejection is logged and polling goes on regardless,
// because a dashboard that stops refreshing after one hiccup looks frozen, not broken.
//
// `interval` is a number of ms or a function returning one, so a page can poll a finished
// job less often than a running one.
export function startPolling(task, interval) {
  let timer = null;
  let stopped = false;
  let running = false;
  let rerun = false; // now() was called during a run: go again right after it

  async function runOnce() {
    timer = null;
    if (stopped) return;
    running = true;
    rerun = false;
    try {
      await task();
    } catch (err) {
      console.error('poll task failed:', err);
    } finally {
      running = false;
    }
    if (stopped) return;
    const delay = rerun ? 0 : typeof interval === 'function' ? interval() : interval;
    timer = setTimeout(runOnce, delay);
  }

  runOnce();
  return {
    stop() {
      stopped = true;
      if (timer !== null) clearTimeout(timer);
    },
    // Runs the task again now rather than at the next tick (e.g. after the user changed what
    // is shown); during a run, as soon as that run ends.
    now() {
      if (stopped) return;
      if (running) {
        rerun = true;
        return;
      }
      if (timer !== null) clearTimeout(timer);
      runOnce();
    },
  };
}
