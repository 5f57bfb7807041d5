//! Writes the OpenAPI 3.1 document of every service with `google.api.http` rules in the
//! given protos, as `fastgrpc-build` generates it, to `<OUT_DIR>/<package.Service>.openapi.json`:
//!
//! ```text
//! cargo run -p fastgrpc-build --example openapi -- OUT_DIR INCLUDE PROTO...
//! ```
//!
//! The Rust code generated alongside goes to a scratch directory and is thrown away.

use std::path::PathBuf;

fn main() -> std::io::Result<()> {
    let mut args = std::env::args_os().skip(1);
    let usage = || std::io::Error::other("usage: openapi OUT_DIR INCLUDE PROTO...");
    let out_dir = PathBuf::from(args.next().ok_or_else(usage)?);
    let include = PathBuf::from(args.next().ok_or_else(usage)?);
    let protos: Vec<PathBuf> = args.map(PathBuf::from).collect();
    if protos.is_empty() {
        return Err(usage());
    }
    let scratch = std::env::temp_dir().join(format!("fastgrpc-openapi-{}", std::process::id()));
    std::fs::create_dir_all(&scratch)?;
    let result = fastgrpc_build::configure()
        .out_dir(&scratch)
        .emit_rerun_if_changed(false)
        .openapi_dir(&out_dir)
        .compile_protos(&protos, &[include]);
    std::fs::remove_dir_all(&scratch)?;
    result
}
