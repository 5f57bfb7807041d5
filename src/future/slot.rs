//! A heap home for a future that is recycled when the future finishes at once.
//!
//! [`FastFuture::from_future`](super::FastFuture::from_future) must poll a future once and,
//! only if it is not done, keep it for later. A future that is not `Unpin` (every `async fn`)
//! may not move after its first poll, so it must be polled where it will live if it turns out
//! to be pending: on the heap. Allocating that home for every call would cost the ready path an
//! allocation, so homes are recycled: each thread keeps a few freed blocks, keyed by layout,
//! and a future that completes on its first poll gives its block back. In the steady state a
//! ready call reuses a block and allocates nothing; a pending call keeps its block as the
//! `Box` of the spawned future, exactly as if it had been boxed up front.
//!
//! The cache is bounded in blocks and in bytes, and keeps what is used: the block given back
//! last is kept first, and when a new one does not fit, the blocks given back longest ago go.
//! A layout a thread serves all the time thus keeps its block, one seen once is forgotten, and
//! a thread never holds more than `CACHED_BYTES_PER_THREAD` of idle blocks.

use std::alloc::{self, Layout};
use std::cell::RefCell;
use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::pin::Pin;
use std::ptr::NonNull;
use std::task::{Context, Poll};

/// How many freed blocks one thread keeps. A server has a handful of distinct handler future
/// layouts; a few spare blocks each is plenty, and the bound keeps idle memory small.
const CACHED_BLOCKS_PER_THREAD: usize = 16;

/// How many bytes of freed blocks one thread keeps, at most.
const CACHED_BYTES_PER_THREAD: usize = 64 * 1024;

/// Larger blocks are not kept: a future this big is rare, and would crowd out the others.
const LARGEST_CACHED_BLOCK: usize = CACHED_BYTES_PER_THREAD / 4;

/// Freed blocks of this thread, each with the layout it was allocated with, the one given
/// back longest ago first.
///
/// Invariants: `bytes` is the sum of the blocks' sizes; at most `CACHED_BLOCKS_PER_THREAD`
/// blocks and `CACHED_BYTES_PER_THREAD` bytes.
struct BlockCache {
    blocks: Vec<(Layout, NonNull<u8>)>,
    bytes: usize,
}

impl Drop for BlockCache {
    fn drop(&mut self) {
        for (layout, ptr) in self.blocks.drain(..) {
            // SAFETY: every cached block was allocated by the global allocator with `layout`.
            unsafe { alloc::dealloc(ptr.as_ptr(), layout) };
        }
    }
}

thread_local! {
    static CACHE: RefCell<BlockCache> = const {
        RefCell::new(BlockCache { blocks: Vec::new(), bytes: 0 })
    };
}

impl BlockCache {
    /// The block of `layout` given back last, if any.
    fn take(&mut self, layout: Layout) -> Option<NonNull<u8>> {
        let index = self.blocks.iter().rposition(|(l, _)| *l == layout)?;
        let (_, ptr) = self.blocks.remove(index);
        self.bytes -= layout.size();
        Some(ptr)
    }

    /// Keeps `ptr`, making room by freeing the blocks given back longest ago; gives it back
    /// if it is too large to keep.
    fn keep(&mut self, layout: Layout, ptr: NonNull<u8>) -> Result<(), NonNull<u8>> {
        if layout.size() > LARGEST_CACHED_BLOCK {
            return Err(ptr);
        }
        while self.blocks.len() == CACHED_BLOCKS_PER_THREAD
            || self.bytes + layout.size() > CACHED_BYTES_PER_THREAD
        {
            let (old_layout, old) = self.blocks.remove(0);
            self.bytes -= old_layout.size();
            // SAFETY: every cached block was allocated by the global allocator with its layout.
            unsafe { alloc::dealloc(old.as_ptr(), old_layout) };
        }
        self.blocks.push((layout, ptr));
        self.bytes += layout.size();
        Ok(())
    }
}

fn take_block(layout: Layout) -> NonNull<u8> {
    let cached = CACHE
        .try_with(|cache| cache.borrow_mut().take(layout))
        .ok()
        .flatten();
    cached.unwrap_or_else(|| {
        // SAFETY: `layout` has a non-zero size (zero-sized futures never reach here).
        let ptr = unsafe { alloc::alloc(layout) };
        NonNull::new(ptr).unwrap_or_else(|| alloc::handle_alloc_error(layout))
    })
}

fn give_back_block(layout: Layout, ptr: NonNull<u8>) {
    // A thread shutting down has no cache left: the block is freed.
    let kept = CACHE
        .try_with(|cache| cache.borrow_mut().keep(layout, ptr))
        .unwrap_or(Err(ptr));
    if let Err(ptr) = kept {
        // SAFETY: the block was allocated by the global allocator with `layout`.
        unsafe { alloc::dealloc(ptr.as_ptr(), layout) };
    }
}

/// A block taken for a future not yet written into it; dropped, it goes back to the cache.
struct Unfilled {
    layout: Layout,
    ptr: NonNull<u8>,
}

impl Drop for Unfilled {
    fn drop(&mut self) {
        if self.layout.size() != 0 {
            give_back_block(self.layout, self.ptr);
        }
    }
}

/// A future of type `F` living in a (possibly recycled) heap block.
///
/// Invariant: `ptr` points to an initialized `F` in a block allocated by the global allocator
/// with `Layout::new::<F>()` (or is dangling when `F` is zero-sized). The `F` never moves.
pub(crate) struct Slot<F> {
    ptr: NonNull<F>,
    _owns: PhantomData<F>,
}

// SAFETY: a `Slot<F>` owns its `F` exactly like a `Box<F>` does.
unsafe impl<F: Send> Send for Slot<F> {}

impl<F: Future> Slot<F> {
    #[cfg(test)]
    pub(crate) fn new(future: F) -> Self {
        Self::new_with(|| future)
    }

    /// The future `make` builds, written straight into its block (a future built first and
    /// then handed over would be copied once more).
    #[inline]
    pub(crate) fn new_with(make: impl FnOnce() -> F) -> Self {
        let layout = Layout::new::<F>();
        let ptr = if layout.size() == 0 {
            NonNull::dangling()
        } else {
            take_block(layout).cast::<F>()
        };
        // Should `make` panic, the block goes back to the cache, unread.
        let unfilled = Unfilled {
            layout,
            ptr: ptr.cast(),
        };
        // SAFETY: `ptr` is valid for writes of `F` and suitably aligned.
        unsafe { ptr.as_ptr().write(make()) };
        std::mem::forget(unfilled);
        Slot {
            ptr,
            _owns: PhantomData,
        }
    }

    pub(crate) fn poll(&mut self, cx: &mut Context<'_>) -> Poll<F::Output> {
        // SAFETY: the future is never moved out of its block (see the type's invariant).
        unsafe { Pin::new_unchecked(self.ptr.as_mut()) }.poll(cx)
    }

    /// Turns the slot into an ordinary pinned box, without moving the future.
    pub(crate) fn into_box(self) -> Pin<Box<F>> {
        let this = ManuallyDrop::new(self);
        // SAFETY: the block was allocated by the global allocator with `Layout::new::<F>()`
        // (or is dangling for a zero-sized `F`), which is what `Box<F>` expects; the future
        // stays where it was polled, so pinning it is sound.
        unsafe { Pin::new_unchecked(Box::from_raw(this.ptr.as_ptr())) }
    }
}

impl<F> Drop for Slot<F> {
    fn drop(&mut self) {
        // SAFETY: the slot owns an initialized `F`; after this it is never used again.
        unsafe { self.ptr.as_ptr().drop_in_place() };
        let layout = Layout::new::<F>();
        if layout.size() != 0 {
            give_back_block(layout, self.ptr.cast());
        }
    }
}

impl<F> fmt::Debug for Slot<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Slot").finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::task::Waker;

    struct CountsDrops(Arc<AtomicUsize>);
    impl Drop for CountsDrops {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn ready_future_is_dropped_and_block_reused() {
        let drops = Arc::new(AtomicUsize::new(0));
        let guard = CountsDrops(drops.clone());
        let mut slot = Slot::new(async move {
            let _guard = guard;
            7u64
        });
        let first = slot.ptr.cast::<u8>();
        assert_eq!(
            slot.poll(&mut Context::from_waker(Waker::noop())),
            Poll::Ready(7)
        );
        drop(slot);
        assert_eq!(drops.load(Ordering::SeqCst), 1);

        // Same layout again: the freed block comes back.
        let guard = CountsDrops(drops.clone());
        let slot = Slot::new(async move {
            let _guard = guard;
            8u64
        });
        assert_eq!(slot.ptr.cast::<u8>(), first);
        drop(slot);
        assert_eq!(drops.load(Ordering::SeqCst), 2, "unpolled future dropped");
    }

    #[test]
    fn a_future_whose_making_panics_gives_its_block_back() {
        type Future = std::future::Ready<[u64; 5]>;
        let made = std::panic::catch_unwind(|| {
            Slot::<Future>::new_with(|| panic!("building the future failed"))
        });
        assert!(made.is_err());
        let block = CACHE.with(|cache| cache.borrow().blocks.last().copied());
        let (layout, ptr) = block.expect("the block is cached again");
        assert_eq!(layout, Layout::new::<Future>());
        let slot = Slot::new(std::future::ready([1u64; 5]));
        assert_eq!(slot.ptr.cast::<u8>(), ptr, "and used for the next future");
    }

    #[test]
    fn pending_future_keeps_running_from_its_box() {
        let mut polled = false;
        let mut slot = Slot::new(std::future::poll_fn(move |_| {
            if polled {
                Poll::Ready("done")
            } else {
                polled = true;
                Poll::Pending
            }
        }));
        let mut cx = Context::from_waker(Waker::noop());
        assert!(slot.poll(&mut cx).is_pending());
        let mut boxed = slot.into_box();
        assert_eq!(boxed.as_mut().poll(&mut cx), Poll::Ready("done"));
    }

    /// A ready future of `N` bytes and more, run through a slot.
    fn run_future_of<const N: usize>() {
        let data = [7u8; N];
        let mut slot = Slot::new(async move { std::hint::black_box(data).len() });
        assert_eq!(
            slot.poll(&mut Context::from_waker(Waker::noop())),
            Poll::Ready(N)
        );
    }

    fn layout_of<const N: usize>() -> Layout {
        fn layout<F>(_: &F) -> Layout {
            Layout::new::<F>()
        }
        let data = [7u8; N];
        layout(&async move { std::hint::black_box(data).len() })
    }

    fn cached(layout: Layout) -> bool {
        CACHE.with_borrow(|cache| cache.blocks.iter().any(|(l, _)| *l == layout))
    }

    fn cached_bytes() -> usize {
        CACHE.with_borrow(|cache| {
            assert_eq!(
                cache.bytes,
                cache.blocks.iter().map(|(l, _)| l.size()).sum::<usize>()
            );
            cache.bytes
        })
    }

    /// Runs `f` on a new thread, whose cache starts empty.
    fn on_fresh_thread(f: impl FnOnce() + Send + 'static) {
        std::thread::spawn(f).join().unwrap();
    }

    macro_rules! run_sizes {
        ($($n:literal)*) => { $( run_future_of::<$n>(); )* };
    }

    macro_rules! run_interleaved {
        ($used:literal; $($n:literal)*) => { $( run_future_of::<$n>(); run_future_of::<$used>(); )* };
    }

    #[test]
    fn a_layout_seen_after_the_cache_filled_up_is_cached_and_one_in_use_stays() {
        on_fresh_thread(|| {
            // The layout this thread serves all along, between forty others: more than the
            // cache holds.
            run_interleaved!(100; 200 210 220 230 240 250 260 270 280 290 300 310 320 330 340 350 360 370 380 390);
            run_interleaved!(100; 400 410 420 430 440 450 460 470 480 490 500 510 520 530 540 550 560 570 580 590);
            assert!(cached(layout_of::<100>()), "the layout in use was evicted");
            assert!(
                cached(layout_of::<590>()),
                "the newest layout was not cached"
            );
            assert!(
                !cached(layout_of::<200>()),
                "the oldest idle layout is kept"
            );
            assert!(CACHE.with_borrow(|cache| cache.blocks.len()) <= CACHED_BLOCKS_PER_THREAD);
        });
    }

    #[test]
    fn idle_blocks_are_bounded_in_bytes() {
        on_fresh_thread(|| {
            run_sizes!(8000 8100 8200 8300 8400 8500 8600 8700 8800 8900 9000 9100);
            assert!(cached(layout_of::<9100>()));
            assert!(
                cached_bytes() <= CACHED_BYTES_PER_THREAD,
                "{} bytes of idle blocks",
                cached_bytes()
            );
            run_future_of::<{ LARGEST_CACHED_BLOCK + 1 }>();
            assert!(
                !cached(layout_of::<{ LARGEST_CACHED_BLOCK + 1 }>()),
                "too large to keep"
            );
        });
    }

    #[test]
    fn zero_sized_futures_need_no_block() {
        let mut slot = Slot::new(std::future::ready(()));
        assert_eq!(
            slot.poll(&mut Context::from_waker(Waker::noop())),
            Poll::Ready(())
        );
    }
}
