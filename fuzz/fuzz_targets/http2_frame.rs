#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| fastgrpc::fuzz_logic::http2_frame(data));
