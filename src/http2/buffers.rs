//! The read and write buffers of connections with nothing in them, kept per thread for the
//! next connection that has bytes to read or write.
//!
//! A connection between calls holds no buffer: it gives both back once it has read
//! everything and written everything, and takes them again when it is next polled. A
//! thousand idle connections then cost a thousand empty `BytesMut`s, not 32 MiB of buffers;
//! a busy connection takes back the buffers it just gave (no allocation), since its thread
//! is the one that kept them.
//!
//! Bounded: at most [`SPARE`] buffers a thread, each of at most [`LARGEST_KEPT`] bytes. (A
//! buffer some `Bytes` still points into, a request body a call holds, counts by its room
//! after them; its allocation is still no larger than a connection's buffers grow: a read
//! round, or the write high water and a frame.)

use std::cell::RefCell;

use bytes::BytesMut;

/// The room a connection's buffer starts with: one frame of the default maximum size and
/// its head, or many small ones.
pub(crate) const INITIAL: usize = 16 * 1024;

/// The most buffers a thread keeps.
const SPARE: usize = 8;

/// A buffer that grew past this (for a large frame, or a burst of replies) is dropped rather
/// than kept.
const LARGEST_KEPT: usize = 64 * 1024;

/// A buffer with less room than this is not worth keeping. (A buffer's room is what lies
/// after the bytes split off it; `reserve` gets the rest back once they are dropped.)
const SMALLEST_KEPT: usize = 4 * 1024;

thread_local! {
    static BUFFERS: RefCell<Vec<BytesMut>> = const { RefCell::new(Vec::new()) };
}

/// An empty buffer: a kept one (with room for at least [`SMALLEST_KEPT`] bytes; whoever needs
/// more reserves it, which takes back the front that split-off frames used once they are
/// gone), or a new one with room for [`INITIAL`].
pub(crate) fn take() -> BytesMut {
    BUFFERS
        .try_with(|spare| spare.borrow_mut().pop())
        .ok()
        .flatten()
        .unwrap_or_else(|| BytesMut::with_capacity(INITIAL))
}

/// Keeps `buffer` (which must be empty) for a later [`take`], unless it is too small, too
/// large, or the thread has enough.
pub(crate) fn give_back(mut buffer: BytesMut) {
    debug_assert!(buffer.is_empty());
    // The front that split-off frames used comes back if nothing points into it any more
    // (no copy, no allocation): the capacity is then the whole allocation.
    let _ = buffer.try_reclaim(buffer.capacity() + 1);
    if !(SMALLEST_KEPT..=LARGEST_KEPT).contains(&buffer.capacity()) {
        return;
    }
    let _ = BUFFERS.try_with(|spare| {
        let mut spare = spare.borrow_mut();
        if spare.len() < SPARE {
            spare.push(buffer);
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_buffer_given_back_is_taken_again_and_the_pool_is_bounded() {
        let mut buffer = take();
        let at = buffer.as_ptr();
        assert!(buffer.capacity() >= INITIAL, "a new buffer");
        // A frame read and split off, then dropped: the buffer comes back whole.
        buffer.extend_from_slice(&[1; 200]);
        drop(buffer.split_to(200));
        give_back(buffer);
        let mut again = take();
        again.reserve(INITIAL);
        assert_eq!(again.as_ptr(), at, "the same buffer, from its start");
        for _ in 0..SPARE + 3 {
            give_back(BytesMut::with_capacity(INITIAL));
        }
        give_back(BytesMut::with_capacity(LARGEST_KEPT + 1));
        give_back(BytesMut::with_capacity(SMALLEST_KEPT - 1));
        let kept = BUFFERS.with(|spare| spare.borrow().len());
        assert_eq!(kept, SPARE);
        assert!(BUFFERS.with(|spare| {
            let spare = spare.borrow();
            spare
                .iter()
                .all(|b| (SMALLEST_KEPT..=LARGEST_KEPT).contains(&b.capacity()))
        }));
    }

    #[test]
    fn a_buffer_that_grew_large_is_not_kept_though_its_room_is_small() {
        // Written out: what is left of it is small, its allocation is not.
        let mut written = BytesMut::with_capacity(4 * LARGEST_KEPT);
        written.extend_from_slice(&vec![0; 4 * LARGEST_KEPT - SMALLEST_KEPT]);
        drop(written.split_to(4 * LARGEST_KEPT - SMALLEST_KEPT));
        assert!(written.capacity() <= LARGEST_KEPT);
        give_back(written);
        assert_eq!(BUFFERS.with(|spare| spare.borrow().len()), 0);
    }
}
