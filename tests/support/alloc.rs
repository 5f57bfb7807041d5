//! A global allocator that counts the allocations of the threads that ask it to, and the bytes
//! they request.
//!
//! Counting only on the measuring thread keeps the test harness's own threads out of the
//! figures. A binary installs [`CountingAllocator`] as its `#[global_allocator]`: the tests'
//! `allocation_counts`, and the benchmarks, which include this file with `#[path]`.
//!
//! Bytes are what the allocator is asked for: the size of each `alloc` and `alloc_zeroed`, and
//! the new size of each `realloc` (counted, like the allocation count, as a new allocation).
//! Frees are not subtracted: the figure is bytes allocated, not bytes live. Live bytes are
//! counted apart ([`live_bytes`]): what the thread allocated, less what it freed, while
//! counting.

#![allow(dead_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

#[derive(Debug)]
pub struct CountingAllocator;

thread_local! {
    static COUNTING: Cell<bool> = const { Cell::new(false) };
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
    static BYTES: Cell<u64> = const { Cell::new(0) };
    static LIVE: Cell<i64> = const { Cell::new(0) };
}

// SAFETY: every call is forwarded to `System`; the thread-locals are const-initialized
// `Cell`s without destructors, so touching them never allocates or re-enters the allocator.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note_allocation();
        note_bytes(layout.size());
        note_live(layout.size() as i64);
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note_allocation();
        note_bytes(layout.size());
        note_live(layout.size() as i64);
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note_allocation();
        note_bytes(new_size);
        note_live(new_size as i64 - layout.size() as i64);
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        note_live(-(layout.size() as i64));
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { System.dealloc(ptr, layout) }
    }
}

fn note_allocation() {
    let _ = COUNTING.try_with(|counting| {
        if counting.get() {
            let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
        }
    });
}

fn note_bytes(size: usize) {
    let _ = COUNTING.try_with(|counting| {
        if counting.get() {
            let _ = BYTES.try_with(|n| n.set(n.get() + size as u64));
        }
    });
}

fn note_live(change: i64) {
    let _ = COUNTING.try_with(|counting| {
        if counting.get() {
            let _ = LIVE.try_with(|n| n.set(n.get() + change));
        }
    });
}

/// Bytes allocated on this thread while counting, less those freed on it while counting.
pub fn live_bytes() -> i64 {
    LIVE.with(Cell::get)
}

/// Starts or stops counting this thread's allocations.
pub fn set_counting(on: bool) {
    COUNTING.with(|c| c.set(on));
}

/// Allocations counted on this thread so far.
pub fn counted() -> u64 {
    ALLOCATIONS.with(Cell::get)
}

/// Bytes allocated on this thread so far, while counting.
pub fn counted_bytes() -> u64 {
    BYTES.with(Cell::get)
}

/// Runs `f` on this thread and returns its result with the heap allocations it made.
pub fn count_allocations<T>(f: impl FnOnce() -> T) -> (T, u64) {
    let before = ALLOCATIONS.with(Cell::get);
    COUNTING.with(|c| c.set(true));
    let value = f();
    COUNTING.with(|c| c.set(false));
    (value, ALLOCATIONS.with(Cell::get) - before)
}

/// Runs `f` on this thread and returns its result with the heap allocations it made and the
/// bytes they requested.
pub fn count_allocations_and_bytes<T>(f: impl FnOnce() -> T) -> (T, u64, u64) {
    let bytes_before = BYTES.with(Cell::get);
    let (value, allocations) = count_allocations(f);
    (value, allocations, BYTES.with(Cell::get) - bytes_before)
}

/// A server running on a thread of its own, with a current-thread runtime, counting every
/// allocation that thread makes: a server's own allocations, apart from its clients'.
#[derive(Debug)]
pub struct CountedServer {
    pub addr: std::net::SocketAddr,
    ask: tokio::sync::mpsc::UnboundedSender<tokio::sync::oneshot::Sender<u64>>,
}

impl CountedServer {
    /// Starts `serve` on a new thread, on a loopback listener.
    pub fn start<F, Fut>(serve: F) -> CountedServer
    where
        F: FnOnce(tokio::net::TcpListener) -> Fut + Send + 'static,
        Fut: std::future::Future<Output = ()> + 'static,
    {
        let (addr_tx, addr_rx) = std::sync::mpsc::channel();
        let (ask, mut asked) =
            tokio::sync::mpsc::unbounded_channel::<tokio::sync::oneshot::Sender<u64>>();
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
                addr_tx.send(listener.local_addr().unwrap()).unwrap();
                set_counting(true);
                let local = tokio::task::LocalSet::new();
                local.spawn_local(serve(listener));
                local
                    .run_until(async move {
                        // Ends when the `CountedServer` is dropped, and the thread with it.
                        while let Some(reply) = asked.recv().await {
                            let _ = reply.send(counted());
                        }
                    })
                    .await;
            });
        });
        CountedServer {
            addr: addr_rx.recv().unwrap(),
            ask,
        }
    }

    /// The allocations the server's thread has made so far.
    pub async fn counted(&self) -> u64 {
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.ask.send(tx).unwrap();
        rx.await.unwrap()
    }
}
