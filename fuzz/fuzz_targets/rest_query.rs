#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| fastgrpc_fuzz_oracles::rest_query(data));
