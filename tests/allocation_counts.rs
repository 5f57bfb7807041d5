//! Allocation counts, under a global allocator that counts the allocations of the thread that
//! asks it to (`support::alloc`): the unary chain and a warm call over a socket, the idle
//! timeout, `map_async`.

mod allocations;
mod idle_timeout_allocs;
mod map_async_allocs;

#[global_allocator]
static ALLOCATOR: support::alloc::CountingAllocator = support::alloc::CountingAllocator;
