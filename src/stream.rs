//! Ordered `map_async` for streams, with a fast path for results that are already ready.
