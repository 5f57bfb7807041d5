#![no_main]

#[path = "../logic.rs"]
mod logic;

libfuzzer_sys::fuzz_target!(|data: &[u8]| logic::route(data));
