//! A per-thread arena that small encoded frames are cut from, so that encoding a reply
//! allocates nothing in the steady state.
//!
//! Each thread keeps one chunk, a [`BytesMut`] of [`CHUNK_SIZE`] bytes. A frame of at most
//! [`MAX_SHARED_FRAME`] bytes is written at the front of the chunk's free space and split off as
//! a [`Bytes`] that shares the chunk (`bytes` counts the references). When the free space is too
//! short for the next frame, the chunk is reused from its start if every frame cut from it has
//! been dropped (h2 drops a frame once it has written it); otherwise the thread moves on to a
//! fresh chunk and the old one is freed when its last frame is dropped.
//!
//! Invariants:
//! - Between calls the thread's chunk holds no data (`len() == 0`): every frame written is split
//!   off whole (and a write that panicked half-way is cleared), so reusing a chunk copies
//!   nothing.
//! - A chunk costs two allocations: its buffer, and the shared reference count `bytes` creates
//!   the first time a frame is split from it. Reusing it in place costs none.
//! - Memory: a frame that is held (queued for a peer whose window is closed, or by a stalled
//!   reply stream) keeps its whole chunk alive, so it pins at most one chunk, `CHUNK_SIZE`
//!   bytes. A thread owns its current chunk plus the chunks its held frames pin. A frame larger
//!   than `MAX_SHARED_FRAME` gets a buffer of exactly its size, so a chunk always takes at least
//!   four frames and the tail left unused when a chunk is replaced is shorter than one frame
//!   (at most a quarter of the chunk).

use std::cell::RefCell;

use bytes::{Bytes, BytesMut};

/// Size of one chunk.
const CHUNK_SIZE: usize = 8 * 1024;

/// Largest frame cut from a chunk: a quarter of it, so at least three quarters of every chunk
/// carries frames.
const MAX_SHARED_FRAME: usize = CHUNK_SIZE / 4;

thread_local! {
    /// This thread's chunk; `None` until the first frame.
    static CHUNK: RefCell<Option<BytesMut>> = const { RefCell::new(None) };
}

/// A frame of exactly `len` bytes, written by `write` into an empty buffer.
///
/// `write` must write exactly `len` bytes (checked in debug builds); if it writes more the frame
/// is still whole, only the allocation is no longer amortized.
pub(super) fn frame(len: usize, write: impl FnOnce(&mut BytesMut)) -> Bytes {
    if len > MAX_SHARED_FRAME {
        return own_buffer(len, write);
    }
    // A thread shutting down has no arena left, and a `write` that itself encodes a frame finds
    // the chunk borrowed: both get a buffer of their own.
    let free = CHUNK
        .try_with(|slot| slot.try_borrow_mut().is_ok())
        .unwrap_or(false);
    if !free {
        return own_buffer(len, write);
    }
    // Written in place: taking the chunk out of its slot and putting it back (a `Cell`) made
    // encoding ~15 ns slower than allocating; in place it costs about the same.
    CHUNK.with_borrow_mut(|slot| {
        // `clear` only matters after a `write` that panicked half-way. `try_reclaim` never
        // allocates: it succeeds if there is room after the frames already cut, or if every
        // frame cut so far was dropped (it then rewinds to the chunk's start). Otherwise some
        // frame of this chunk is still held: leave the chunk to it.
        let reusable = slot.as_mut().is_some_and(|chunk| {
            chunk.clear();
            chunk.try_reclaim(len)
        });
        if !reusable {
            *slot = None;
        }
        let chunk = slot.get_or_insert_with(|| BytesMut::with_capacity(CHUNK_SIZE));
        write(chunk);
        debug_assert_eq!(chunk.len(), len, "a frame writes the length it declared");
        chunk.split().freeze()
    })
}

/// A frame in a buffer of its own, of exactly `len` bytes.
fn own_buffer(len: usize, write: impl FnOnce(&mut BytesMut)) -> Bytes {
    let mut buf = BytesMut::with_capacity(len);
    write(&mut buf);
    debug_assert_eq!(buf.len(), len, "a frame writes the length it declared");
    buf.freeze()
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::BufMut;

    /// A frame of `len` bytes, all `fill`.
    fn filled(len: usize, fill: u8) -> Bytes {
        frame(len, |buf| buf.put_bytes(fill, len))
    }

    #[test]
    fn held_frames_keep_their_bytes_while_the_arena_moves_on() {
        // Sizes that do not divide the chunk, so chunks are left with tails.
        let held: Vec<(Bytes, u8)> = (0..2_000usize)
            .map(|i| {
                let fill = (i % 251) as u8;
                (filled(1 + i % 300, fill), fill)
            })
            .collect();
        for (i, (frame, fill)) in held.iter().enumerate() {
            assert_eq!(frame.len(), 1 + i % 300);
            assert!(frame.iter().all(|b| b == fill), "frame {i} was overwritten");
        }
    }

    // That a chunk whose frames were all dropped is reused without allocating is checked with
    // a counting allocator in `tests/allocations.rs`.

    /// Runs `f` on a new thread, whose arena starts empty.
    fn on_fresh_thread(f: impl FnOnce() + Send + 'static) {
        std::thread::spawn(f).join().unwrap();
    }

    #[test]
    fn a_held_frame_sends_the_next_ones_to_a_new_chunk() {
        on_fresh_thread(|| {
            let held = filled(100, 1);
            let pinned = held.as_ptr_range();
            // Two chunks' worth of frames, each dropped at once: the arena runs short while
            // only `held` is alive, and must not reuse its chunk.
            for _ in 0..2 * CHUNK_SIZE / 100 {
                let frame = filled(100, 2);
                let range = frame.as_ptr_range();
                assert!(
                    range.end <= pinned.start || range.start >= pinned.end,
                    "a later frame overlaps the held one"
                );
            }
            assert!(held.iter().all(|&b| b == 1));
        });
    }

    #[test]
    fn large_frames_get_their_own_buffer() {
        let large = filled(MAX_SHARED_FRAME + 1, 7);
        assert_eq!(large.len(), MAX_SHARED_FRAME + 1);
        let small = filled(10, 8);
        // The small frame comes from the chunk, not from the space after the large one.
        let large_range = large.as_ptr_range();
        assert!(!large_range.contains(&small.as_ptr()));
        assert!(large.iter().all(|&b| b == 7));
    }

    #[test]
    fn a_write_that_panics_leaves_nothing_behind() {
        on_fresh_thread(|| {
            let panicked = std::panic::catch_unwind(|| {
                frame(20, |buf| {
                    buf.put_bytes(5, 10);
                    panic!("half-way");
                })
            });
            assert!(panicked.is_err());
            let next = filled(20, 6);
            assert_eq!(next.len(), 20);
            assert!(next.iter().all(|&b| b == 6));
        });
    }

    #[test]
    fn a_frame_written_while_writing_a_frame_is_whole() {
        let mut inner = None;
        let outer = frame(20, |buf| {
            inner = Some(filled(30, 9));
            buf.put_bytes(4, 20);
        });
        assert!(outer.iter().all(|&b| b == 4));
        assert_eq!(outer.len(), 20);
        let inner = inner.unwrap();
        assert!(inner.iter().all(|&b| b == 9));
        assert_eq!(inner.len(), 30);
    }
}
