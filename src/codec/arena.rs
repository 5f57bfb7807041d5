//! A per-thread arena that small encoded frames are cut from, so that encoding a reply
//! allocates nothing in the steady state.
//!
//! Each thread keeps a current chunk, a [`BytesMut`] of [`CHUNK_SIZE`] bytes. A frame of at most
//! [`MAX_SHARED_FRAME`] bytes is written at the front of the chunk's free space and split off as
//! a [`Bytes`] that shares the chunk (`bytes` counts the references). When the free space is too
//! short for the next frame, the chunk is reused from its start if every frame cut from it has
//! been dropped (h2 drops a frame once it has written it). Otherwise the thread sets it aside
//! as pinned and takes a pinned chunk whose frames have all been dropped since, or a fresh one.
//!
//! A frame that is held (queued for a peer whose window stays closed, or by a stalled reply
//! stream) keeps its whole chunk alive. Left unbounded, a client holding one frame in every
//! chunk's worth of traffic would pin a chunk per held frame: about 8 KiB per stream, on every
//! connection. So a thread keeps at most [`MAX_PINNED_CHUNKS`] chunks aside; with all of them
//! still pinned, small frames get buffers of their own (exactly their size, so a held one pins
//! only its own bytes) until a chunk is free again.
//!
//! Invariants:
//! - Between calls the current chunk holds no data (`len() == 0`): every frame written is split
//!   off whole (and a write that panicked half-way is cleared), so reusing a chunk copies
//!   nothing.
//! - A chunk costs two allocations: its buffer, and the shared reference count `bytes` creates
//!   the first time a frame is split from it. Reusing it in place costs none.
//! - Memory: the arena never lets go of a chunk that frames still pin, so the chunks it has made
//!   are all in its hands: a thread's frames pin at most `1 + MAX_PINNED_CHUNKS` chunks (72
//!   KiB), whatever its connections do, besides the bytes of frames in buffers of their own. A
//!   frame larger than `MAX_SHARED_FRAME` gets a buffer of exactly its size, so a chunk always
//!   takes at least four frames and the tail left unused when a chunk is replaced is shorter
//!   than one frame (at most a quarter of the chunk).

use std::cell::RefCell;

use bytes::{Bytes, BytesMut};

/// Size of one chunk.
const CHUNK_SIZE: usize = 8 * 1024;

/// Largest frame cut from a chunk: a quarter of it, so at least three quarters of every chunk
/// carries frames.
const MAX_SHARED_FRAME: usize = CHUNK_SIZE / 4;

/// How many chunks a thread sets aside while frames still pin them.
const MAX_PINNED_CHUNKS: usize = 8;

/// A thread's chunks.
struct Arena {
    /// The chunk frames are cut from; `None` until the first frame.
    current: Option<BytesMut>,
    /// Chunks the thread moved on from while some frame cut from them was still alive.
    pinned: Vec<BytesMut>,
}

thread_local! {
    static ARENA: RefCell<Arena> = const {
        RefCell::new(Arena { current: None, pinned: Vec::new() })
    };
}

impl Arena {
    /// A chunk with room for `len` bytes at its front, if the arena may cut one more frame.
    fn chunk_for(&mut self, len: usize) -> Option<&mut BytesMut> {
        // `clear` only matters after a `write` that panicked half-way. `try_reclaim` never
        // allocates: it succeeds if there is room after the frames already cut, or if every
        // frame cut so far was dropped (it then rewinds to the chunk's start).
        let reusable = |chunk: &mut BytesMut| {
            chunk.clear();
            chunk.try_reclaim(len)
        };
        if !self.current.as_mut().is_some_and(reusable) {
            let free = self.pinned.iter_mut().position(reusable);
            let next = match free {
                Some(index) => Some(self.pinned.swap_remove(index)),
                None if self.pinned.len() < MAX_PINNED_CHUNKS || self.current.is_none() => {
                    Some(BytesMut::with_capacity(CHUNK_SIZE))
                }
                // Every chunk is pinned: hold on to them all, and cut nothing.
                None => return None,
            };
            if let Some(held) = std::mem::replace(&mut self.current, next) {
                self.pinned.push(held);
            }
        }
        self.current.as_mut()
    }
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
    // the arena borrowed: both get a buffer of their own.
    let free = ARENA
        .try_with(|arena| arena.try_borrow_mut().is_ok())
        .unwrap_or(false);
    if !free {
        return own_buffer(len, write);
    }
    // Written in place: taking the chunk out of its slot and putting it back (a `Cell`) made
    // encoding slower than allocating; in place it costs about the same (docs/BENCHMARKS.md).
    ARENA.with_borrow_mut(|arena| match arena.chunk_for(len) {
        Some(chunk) => {
            write(chunk);
            debug_assert_eq!(chunk.len(), len, "a frame writes the length it declared");
            chunk.split().freeze()
        }
        None => own_buffer(len, write),
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
    fn frames_held_one_per_chunk_pin_a_bounded_number_of_chunks() {
        on_fresh_thread(|| {
            let address = |frame: &Bytes| frame.as_ptr() as usize;
            // Hold one frame, then let a chunk's worth of frames go, many times over: without
            // a bound every held frame would keep a chunk of its own alive.
            let mut held = Vec::new();
            for round in 0..100u8 {
                held.push(filled(64, round));
                for _ in 0..CHUNK_SIZE / 64 {
                    drop(filled(64, 0xff));
                }
            }
            ARENA.with_borrow(|arena| {
                assert!(arena.pinned.len() <= MAX_PINNED_CHUNKS);
            });
            // Each held frame lies in one of the arena's chunks or in a buffer of its own.
            let chunks: Vec<std::ops::Range<usize>> = ARENA.with_borrow(|arena| {
                arena
                    .current
                    .iter()
                    .chain(&arena.pinned)
                    .map(|chunk| {
                        let end = chunk.as_ptr() as usize + chunk.capacity();
                        end - CHUNK_SIZE..end
                    })
                    .collect()
            });
            let in_chunks = held
                .iter()
                .filter(|frame| chunks.iter().any(|chunk| chunk.contains(&address(frame))))
                .count();
            assert!(
                in_chunks <= MAX_PINNED_CHUNKS + 1,
                "{in_chunks} held frames in chunks"
            );
            for (round, frame) in held.iter().enumerate() {
                assert!(
                    frame.iter().all(|&b| b == round as u8),
                    "frame {round} overwritten"
                );
            }
            // Once the held frames go, the pinned chunks serve again.
            drop(held);
            let next = filled(64, 1);
            assert!(chunks.iter().any(|chunk| chunk.contains(&address(&next))));
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
