//! A connection's future and, beside it, what would end it from outside (a shutdown, a drain,
//! a timeout), the second polled only when one of its own wakers fired.
//!
//! `tokio::select!` polls every branch each time the task wakes. A connection's task wakes for
//! nearly every call, and the branch beside it rarely has anything to say: polling a
//! cancellation token alone took about 300 instructions a wake (a lock in `tokio-util`), 1.5% of
//! a light call's.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, Wake, Waker};

use futures_util::task::AtomicWaker;
use pin_project_lite::pin_project;

/// Which of the two ended first.
#[derive(Debug)]
pub(super) enum First<M, S> {
    Main(M),
    Side(S),
}

pin_project! {
    /// Runs `main`, and `side` beside it, until one of them completes (`main` first if both
    /// could).
    pub(super) struct Beside<M, S> {
        #[pin]
        main: M,
        #[pin]
        side: S,
        signal: Arc<SideSignal>,
        // `signal` as a waker, made once.
        side_waker: Waker,
    }
}

/// Set when a waker `side` left fires; it then wakes the task.
#[derive(Debug, Default)]
struct SideSignal {
    woken: AtomicBool,
    task: AtomicWaker,
}

impl Wake for SideSignal {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.woken.store(true, Ordering::Release);
        self.task.wake();
    }
}

impl<M, S> Beside<M, S> {
    pub(super) fn new(main: M, side: S) -> Self {
        // Woken at first, so that `side` is polled once and leaves its wakers.
        let signal = Arc::new(SideSignal {
            woken: AtomicBool::new(true),
            task: AtomicWaker::new(),
        });
        Beside {
            main,
            side,
            side_waker: Waker::from(Arc::clone(&signal)),
            signal,
        }
    }
}

impl<M: Future, S: Future> Future for Beside<M, S> {
    type Output = First<M::Output, S::Output>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        // Before `side` can be woken (by a waker it left earlier), so that its wake reaches
        // this task.
        this.signal.task.register(cx.waker());
        if let Poll::Ready(output) = this.main.poll(cx) {
            return Poll::Ready(First::Main(output));
        }
        // A load first: the flag is rarely set, and a swap writes its line at every poll.
        if this.signal.woken.load(Ordering::Relaxed)
            && this.signal.woken.swap(false, Ordering::AcqRel)
        {
            let mut side_cx = Context::from_waker(this.side_waker);
            if let Poll::Ready(output) = this.side.poll(&mut side_cx) {
                return Poll::Ready(First::Side(output));
            }
        }
        Poll::Pending
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;
    use std::time::Duration;

    use super::*;

    /// A future that counts its polls and is never ready.
    struct Counted(Arc<AtomicUsize>);

    impl Future for Counted {
        type Output = ();

        fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<()> {
            self.0.fetch_add(1, Ordering::Relaxed);
            Poll::Pending
        }
    }

    #[tokio::test]
    async fn the_side_is_polled_once_then_only_when_its_waker_fires() {
        let side_polls = Arc::new(AtomicUsize::new(0));
        let (wake_main, mut main_woken) = tokio::sync::mpsc::unbounded_channel::<()>();
        let main = async move {
            for _ in 0..100 {
                main_woken.recv().await;
            }
            "main"
        };
        let beside = tokio::spawn(Beside::new(main, Counted(Arc::clone(&side_polls))));
        for _ in 0..100 {
            wake_main.send(()).unwrap();
            tokio::task::yield_now().await;
        }
        let first = beside.await.unwrap();
        assert!(matches!(first, First::Main("main")), "{first:?}");
        // `tokio::select!` would have polled it at each of the main future's wakes.
        assert_eq!(side_polls.load(Ordering::Relaxed), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn the_side_ends_it_when_its_own_waker_fires() {
        let token = tokio_util::sync::CancellationToken::new();
        let beside = tokio::spawn(Beside::new(
            std::future::pending::<()>(),
            token.clone().cancelled_owned(),
        ));
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert!(!beside.is_finished());
        token.cancel();
        let first = beside.await.unwrap();
        assert!(matches!(first, First::Side(())), "{first:?}");
    }

    /// The side's waker fired from another thread while the main future keeps its task busy
    /// (it wakes itself at every poll): the wake is not lost.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_side_woken_from_another_thread_ends_it() {
        let (send, received) = tokio::sync::oneshot::channel::<&str>();
        let (side_polled, polled) = std::sync::mpsc::channel();
        let side = async move {
            side_polled.send(()).unwrap();
            received.await.unwrap()
        };
        let busy = std::future::poll_fn(|cx| {
            cx.waker().wake_by_ref();
            Poll::<()>::Pending
        });
        let beside = tokio::spawn(Beside::new(busy, side));
        let sender = std::thread::spawn(move || {
            polled.recv().unwrap();
            send.send("side").unwrap();
        });
        let first = tokio::time::timeout(Duration::from_secs(10), beside)
            .await
            .expect("the side's wake is not lost")
            .unwrap();
        assert!(matches!(first, First::Side("side")), "{first:?}");
        sender.join().unwrap();
    }

    #[tokio::test(start_paused = true)]
    async fn a_timer_beside_fires() {
        let started = tokio::time::Instant::now();
        let first = Beside::new(
            std::future::pending::<()>(),
            tokio::time::sleep(Duration::from_secs(3)),
        )
        .await;
        assert!(matches!(first, First::Side(())), "{first:?}");
        assert_eq!(started.elapsed(), Duration::from_secs(3));
    }
}
