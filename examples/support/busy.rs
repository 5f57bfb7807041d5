//! A CPU-heavy handler's work, shared by the example servers that model one (`--work-us`).

use std::time::{Duration, Instant};

/// Computes, without sleeping or yielding, for `duration`.
pub fn busy_for(duration: Duration) {
    let start = Instant::now();
    let mut x = 0u64;
    while start.elapsed() < duration {
        x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
    }
}
