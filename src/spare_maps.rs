//! Header maps of sent responses, kept on their thread for the next responses' heads and
//! trailers.
//!
//! A gRPC reply carries two maps (its head and its trailers), and an `http::HeaderMap`
//! allocates twice on its first insert. fastgrpc's own HTTP/2 engine is done with both once
//! it has encoded them, so it gives them back here, cleared, and the next reply on the thread
//! takes them: a connection's steady state builds its replies' maps without allocating.
//! HTTP/1.1 (hyper) and callers in-process consume the maps they get; their replies take from
//! here only what an HTTP/2 connection gave back.
//!
//! Bounded twice: at most [`SPARE_MAPS`] maps per thread, and only maps no bigger than a
//! reply's usual few fields ([`SPARE_CAPACITY`]), so a reply with much metadata cannot make
//! the pool hold more memory than a few small replies do.

use std::cell::RefCell;

use http::HeaderMap;

/// The most maps a thread keeps.
const SPARE_MAPS: usize = 32;

/// The largest map kept, in fields: what `HeaderMap` allocates for its first few inserts.
const SPARE_CAPACITY: usize = 12;

thread_local! {
    static SPARE: RefCell<Vec<HeaderMap>> = const { RefCell::new(Vec::new()) };
}

/// An empty map: a spare one if this thread has one, else a new one (which allocates on its
/// first insert).
pub(crate) fn take() -> HeaderMap {
    spare().unwrap_or_default()
}

/// A spare map of this thread's, if it has one.
#[inline]
fn spare() -> Option<HeaderMap> {
    SPARE
        .try_with(|spare| spare.borrow_mut().pop())
        .ok()
        .flatten()
}

/// `metadata` if it already has room, a spare map otherwise: where a reply's fields go. With
/// no spare, `metadata` itself, empty as it is: making another empty map and dropping this one
/// would only cost.
#[inline]
pub(crate) fn or_spare(metadata: HeaderMap) -> HeaderMap {
    if metadata.capacity() != 0 {
        return metadata;
    }
    spare().unwrap_or(metadata)
}

/// Keeps `map`, cleared, for a later [`take`] on this thread, unless it is big or the thread
/// has enough.
pub(crate) fn give_back(mut map: HeaderMap) {
    let capacity = map.capacity();
    if capacity == 0 || capacity > SPARE_CAPACITY {
        return;
    }
    map.clear();
    // During thread teardown the pool may be gone: the map is then just dropped.
    let _ = SPARE.try_with(|spare| {
        let mut spare = spare.borrow_mut();
        if spare.len() < SPARE_MAPS {
            spare.push(map);
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    #[test]
    fn a_map_given_back_comes_back_empty_with_its_room() {
        let mut map = HeaderMap::new();
        map.insert("grpc-status", HeaderValue::from_static("0"));
        let room = map.capacity();
        give_back(map);
        let again = take();
        assert!(again.is_empty());
        assert_eq!(again.capacity(), room);
        assert_eq!(take().capacity(), 0, "only one was given back");
    }

    #[test]
    fn big_maps_and_surplus_maps_are_not_kept() {
        let mut big = HeaderMap::new();
        for i in 0..SPARE_CAPACITY + 1 {
            big.insert(
                http::HeaderName::try_from(format!("x-{i}")).unwrap(),
                HeaderValue::from_static("v"),
            );
        }
        give_back(big);
        assert_eq!(take().capacity(), 0, "a big map is dropped");
        for _ in 0..SPARE_MAPS + 5 {
            let mut map = HeaderMap::new();
            map.insert("a", HeaderValue::from_static("b"));
            give_back(map);
        }
        let kept = std::iter::from_fn(|| Some(take()))
            .take_while(|map| map.capacity() > 0)
            .count();
        assert_eq!(kept, SPARE_MAPS);
    }
}
