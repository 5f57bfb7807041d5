#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| fastgrpc::fuzz_logic::hpack_decode(data));
