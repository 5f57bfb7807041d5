#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| fastgrpc_fuzz_oracles::connect_call(data));
