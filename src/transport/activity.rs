//! What a server is doing, counted: open connections and the tasks that finish calls, server
//! wide ([`ServerStats`], public so tests and metrics can watch for leaks), and per connection
//! the calls still outstanding and when the last one ended (for the idle limit).

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use tokio::time::Instant;

/// Live counts of what a server holds: a handle from [`Builder::stats`](crate::Builder::stats)
/// that stays valid while and after the server runs.
///
/// Both counts return to zero once the server has stopped: a task or connection that stayed
/// counted would be a leak.
#[derive(Debug, Clone, Default)]
pub struct ServerStats {
    counts: Arc<Counts>,
}

#[derive(Debug, Default)]
struct Counts {
    connections: AtomicUsize,
    call_tasks: AtomicUsize,
    call_tasks_spawned: AtomicU64,
}

impl ServerStats {
    /// Connections being served (from accept to close, handshake included).
    pub fn connections(&self) -> usize {
        self.counts.connections.load(Ordering::Acquire)
    }

    /// Tasks finishing calls: handlers that did not answer at once, and reply streams that
    /// outlasted the poll they started in. Calls answered inline need none.
    pub fn call_tasks(&self) -> usize {
        self.counts.call_tasks.load(Ordering::Acquire)
    }

    /// Tasks spawned to finish calls since the server was built: calls answered inline add
    /// nothing here, a call whose handler waits (or that was sent to a task) adds one.
    pub fn call_tasks_spawned(&self) -> u64 {
        self.counts.call_tasks_spawned.load(Ordering::Acquire)
    }

    /// Counts a connection until the returned guard is dropped.
    pub(crate) fn connection(&self) -> ConnectionGuard {
        self.counts.connections.fetch_add(1, Ordering::AcqRel);
        ConnectionGuard {
            counts: Arc::clone(&self.counts),
        }
    }
}

/// Counts one connection while it lives.
pub(crate) struct ConnectionGuard {
    counts: Arc<Counts>,
}

impl Drop for ConnectionGuard {
    fn drop(&mut self) {
        self.counts.connections.fetch_sub(1, Ordering::AcqRel);
    }
}

/// One connection's outstanding calls, and since when it has had none.
#[derive(Debug)]
pub(crate) struct Activity {
    stats: ServerStats,
    /// Calls finishing in tasks of their own.
    outstanding: AtomicUsize,
    /// When the connection last started or ended a call, in milliseconds after `opened`.
    last_change_ms: AtomicU64,
    opened: Instant,
}

impl Activity {
    pub(crate) fn new(stats: ServerStats) -> Arc<Self> {
        Arc::new(Activity {
            stats,
            outstanding: AtomicUsize::new(0),
            last_change_ms: AtomicU64::new(0),
            opened: Instant::now(),
        })
    }

    /// Notes that calls were just started (or answered).
    pub(crate) fn touch(&self) {
        let now = self.opened.elapsed().as_millis() as u64;
        self.last_change_ms.fetch_max(now, Ordering::AcqRel);
    }

    /// Spawns `call`, counted as outstanding on this connection and as a call task of the
    /// server until it ends.
    pub(crate) fn spawn<F>(self: &Arc<Self>, call: F)
    where
        F: Future<Output = ()> + Send + 'static,
    {
        let guard = CallGuard::new(Arc::clone(self));
        tokio::spawn(async move {
            let _guard = guard;
            call.await;
        });
    }

    /// Completes once the connection has had no outstanding call for `idle` (never without a
    /// limit).
    pub(crate) async fn idle_for(&self, idle: Option<Duration>) {
        let Some(idle) = idle else {
            return std::future::pending().await;
        };
        loop {
            let quiet_since =
                self.opened + Duration::from_millis(self.last_change_ms.load(Ordering::Acquire));
            let busy = self.outstanding.load(Ordering::Acquire) > 0;
            if !busy && quiet_since.elapsed() >= idle {
                return;
            }
            // Look again when the quiet time could first reach the limit.
            let next = if busy {
                Instant::now() + idle
            } else {
                quiet_since + idle
            };
            tokio::time::sleep_until(next).await;
        }
    }
}

/// Counts one spawned call, on its connection and server wide, until dropped.
struct CallGuard {
    activity: Arc<Activity>,
}

impl CallGuard {
    fn new(activity: Arc<Activity>) -> Self {
        activity.outstanding.fetch_add(1, Ordering::AcqRel);
        let counts = &activity.stats.counts;
        counts.call_tasks.fetch_add(1, Ordering::AcqRel);
        counts.call_tasks_spawned.fetch_add(1, Ordering::AcqRel);
        CallGuard { activity }
    }
}

impl Drop for CallGuard {
    fn drop(&mut self) {
        let activity = &self.activity;
        activity.touch();
        activity.outstanding.fetch_sub(1, Ordering::AcqRel);
        activity
            .stats
            .counts
            .call_tasks
            .fetch_sub(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_connection_is_idle_only_after_its_last_call_ended_for_the_whole_limit() {
        let stats = ServerStats::default();
        let activity = Activity::new(stats.clone());
        let idle = Some(Duration::from_secs(10));
        let (release, released) = tokio::sync::oneshot::channel::<()>();
        tokio::time::sleep(Duration::from_secs(5)).await;
        activity.spawn(async {
            let _ = released.await;
        });
        tokio::task::yield_now().await;
        assert_eq!((stats.call_tasks(), stats.call_tasks_spawned()), (1, 1));

        let started = Instant::now();
        let idle_watch = tokio::spawn({
            let activity = Arc::clone(&activity);
            async move { activity.idle_for(idle).await }
        });
        // Busy for 30 s: not idle, however long.
        tokio::time::sleep(Duration::from_secs(30)).await;
        assert!(!idle_watch.is_finished());
        release.send(()).unwrap();
        idle_watch.await.unwrap();
        assert_eq!((stats.call_tasks(), stats.call_tasks_spawned()), (0, 1));
        let waited = started.elapsed();
        assert!(
            waited >= Duration::from_secs(40) && waited < Duration::from_secs(41),
            "{waited:?}"
        );
    }
}
