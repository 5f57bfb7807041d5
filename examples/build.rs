//! Generates the greeter for `connectrpc_greeter_server`, the Connect project's Rust server
//! that `benches/e2e.sh connect` measures fastgrpc against: connectrpc-build's messages and
//! service from `proto/helloworld.proto`, through a descriptor set that fastgrpc-build parses
//! (no system `protoc`).

use std::path::PathBuf;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let out_dir = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let descriptors = out_dir.join("helloworld.fds");
    let fds = fastgrpc_build::file_descriptor_set(&["helloworld.proto"], &["../proto"])?;
    std::fs::write(&descriptors, prost::Message::encode_to_vec(&fds))?;
    connectrpc_build::Config::new()
        .files(&["helloworld.proto"])
        .descriptor_set(&descriptors)
        .include_file("_connectrpc.rs")
        .compile()?;
    println!("cargo:rerun-if-changed=../proto/helloworld.proto");
    Ok(())
}
