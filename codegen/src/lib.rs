//! Code generation for [fastgrpc](https://docs.rs/fastgrpc), called from a `build.rs`.
//!
//! Compiles `.proto` files with [`protox`] (a pure-Rust protobuf compiler: no system `protoc`
//! needed), generates the messages with [`prost_build`], their ProtoJSON form (`serde` impls
//! calling the runtime's), and for every service a module `<service>_server` holding the trait
//! to implement and the server that hosts it.
//!
//! An extension (proto2's `extend`) of a message compiled in the same run becomes a field of
//! that message, so that it is kept in binary and written as `"[full.name]"` in JSON (prost
//! itself has no extensions).
//!
//! `google.api.http` annotations: googleapis' `google/api/annotations.proto`, `http.proto`,
//! `httpbody.proto` and `google/rpc/status.proto` (with `code.proto` and
//! `error_details.proto`) ship with this crate and are found after the include paths, so a
//! proto imports them with nothing vendored. Each annotated method's rules are checked (the
//! fields they name exist and a path binds only singular primitive fields, no body on GET or
//! DELETE, no two rules that match the same requests; a failure is a build error naming the
//! method) and generated as the server's table for REST transcoding, with the service's
//! OpenAPI 3.1 document (`OPENAPI` in the server's module, and files with
//! [`Builder::openapi_dir`]).
//!
//! The well-known types (`google.protobuf.Timestamp`, ...) are those of `fastgrpc::types`,
//! which have their special JSON forms; a method taking or returning `google.protobuf.Empty`
//! takes or returns `()`, as with tonic.
//!
//! ```no_run
//! // build.rs
//! fn main() -> std::io::Result<()> {
//!     fastgrpc_build::compile_protos(&["proto/helloworld.proto"], &["proto"])
//! }
//! ```
//!
//! ```text
//! // src/main.rs
//! pub mod helloworld {
//!     include!(concat!(env!("OUT_DIR"), "/helloworld.rs"));
//! }
//! ```

#![deny(missing_docs)]
#![warn(unreachable_pub)]

mod bundled;
mod extensions;
mod json;
mod rest;
mod service;

use std::collections::HashMap;
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

pub use prost_types::FileDescriptorSet;

/// What this repository's fuzz oracles check one step at a time: the parser of
/// `google.api.http` path templates. Not a stable API, and not for users.
#[doc(hidden)]
pub mod internals {
    pub use crate::rest::template::{
        MAX_FIELD_DEPTH, MAX_SEGMENTS, MAX_TEMPLATE_LEN, MAX_VARIABLES, ParseError, Segment,
        Template, Variable, parse,
    };
}

/// Compiles `protos` (found relative to `includes`) into `$OUT_DIR/<package>.rs` files holding
/// messages and fastgrpc services. Shorthand for `configure().compile_protos(..)`.
pub fn compile_protos(
    protos: &[impl AsRef<Path>],
    includes: &[impl AsRef<Path>],
) -> io::Result<()> {
    configure().compile_protos(protos, includes)
}

/// A [`Builder`] with defaults: services generated, output to `$OUT_DIR`.
pub fn configure() -> Builder {
    let mut prost = prost_build::Config::new();
    // googleapis' comments are not written as Rust docs: their indented examples would become
    // failing doc tests of the user's crate, and rustdoc and clippy misread their lists.
    prost.disable_comments(bundled::PACKAGES);
    Builder {
        prost,
        build_server: true,
        spawned_methods: Vec::new(),
        runtime_path: "::fastgrpc".to_owned(),
        emit_rerun_if_changed: true,
        file_descriptor_set_path: None,
        openapi_dir: None,
        out_dir: None,
        extern_paths: Vec::new(),
    }
}

/// Parses `protos` and their imports into a descriptor set, without any system `protoc`.
///
/// Useful to feed the same descriptors to other generators (such as tonic's) in one build.
pub fn file_descriptor_set(
    protos: &[impl AsRef<Path>],
    includes: &[impl AsRef<Path>],
) -> io::Result<FileDescriptorSet> {
    Ok(parse(protos, includes)?.file_descriptor_set())
}

fn parse(
    protos: &[impl AsRef<Path>],
    includes: &[impl AsRef<Path>],
) -> io::Result<protox::Compiler> {
    // Imports are looked up in the user's include paths first, then among the protos bundled
    // here, then among protobuf's own well-known types.
    let mut files = protox::file::ChainFileResolver::new();
    for include in includes {
        files.add(protox::file::IncludeFileResolver::new(
            include.as_ref().to_owned(),
        ));
    }
    files.add(bundled::BundledFiles);
    files.add(protox::file::GoogleFileResolver::new());
    let mut compiler = protox::Compiler::with_file_resolver(files);
    compiler
        .include_imports(true)
        .include_source_info(true)
        .open_files(protos)
        .map_err(invalid_input)?;
    Ok(compiler)
}

fn invalid_input(error: protox::Error) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, format!("{error:?}"))
}

/// Options for generating messages and services.
pub struct Builder {
    prost: prost_build::Config,
    build_server: bool,
    spawned_methods: Vec<String>,
    runtime_path: String,
    emit_rerun_if_changed: bool,
    file_descriptor_set_path: Option<PathBuf>,
    openapi_dir: Option<PathBuf>,
    /// Where prost-build writes; `None` for `$OUT_DIR`, as prost-build has it.
    out_dir: Option<PathBuf>,
    /// What `extern_path` declared, which ProtoJSON takes from elsewhere too.
    extern_paths: Vec<(String, String)>,
}

impl Builder {
    /// Where to write the generated files (default: `$OUT_DIR`).
    pub fn out_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        let dir = dir.into();
        self.prost.out_dir(&dir);
        self.out_dir = Some(dir);
        self
    }

    /// Whether to generate service traits and servers (default: yes). Without them only
    /// messages are generated.
    pub fn build_server(mut self, enable: bool) -> Self {
        self.build_server = enable;
        self
    }

    /// Always runs `method` (`package.Service.Method`, e.g. `helloworld.Greeter.SayHello`) in
    /// a spawned task instead of starting it inline on the connection's thread: for methods
    /// that compute for long, which would otherwise hold up the other calls of their
    /// connection. Adaptive inline (the default) finds such methods after their first two
    /// calls; this spawns from the first. A whole service can opt out at run time with the
    /// server's `run_inline(false)`.
    pub fn spawn_method(mut self, method: impl Into<String>) -> Self {
        self.spawned_methods.push(method.into());
        self
    }

    /// Uses an existing Rust type for a protobuf path instead of generating it
    /// (see [`prost_build::Config::extern_path`]). The type must implement `serde`'s
    /// `Serialize` and `Deserialize` in the ProtoJSON form too (as types generated by
    /// fastgrpc-build or `pbjson-build` do), since the JSON of the messages that contain it
    /// calls them; an enum, `TryFrom<i32>` and `Into<i32>` as well.
    pub fn extern_path(
        mut self,
        proto_path: impl Into<String>,
        rust_path: impl Into<String>,
    ) -> Self {
        let (proto_path, rust_path) = (proto_path.into(), rust_path.into());
        self.prost
            .extern_path(proto_path.clone(), rust_path.clone());
        self.extern_paths.push((proto_path, rust_path));
        self
    }

    /// Adds an attribute to generated types matching `path`
    /// (see [`prost_build::Config::type_attribute`]).
    pub fn type_attribute(mut self, path: impl AsRef<str>, attribute: impl AsRef<str>) -> Self {
        self.prost.type_attribute(path, attribute);
        self
    }

    /// Adds an attribute to generated fields matching `path`
    /// (see [`prost_build::Config::field_attribute`]).
    pub fn field_attribute(mut self, path: impl AsRef<str>, attribute: impl AsRef<str>) -> Self {
        self.prost.field_attribute(path, attribute);
        self
    }

    /// Generates `bytes::Bytes` instead of `Vec<u8>` for `bytes` fields matching `paths`, so
    /// they are decoded without a copy (see [`prost_build::Config::bytes`]).
    pub fn bytes(mut self, paths: impl IntoIterator<Item = impl AsRef<str>>) -> Self {
        self.prost.bytes(paths);
        self
    }

    /// The path generated code uses for the runtime crate (default `::fastgrpc`), for crates
    /// that rename or re-export it.
    pub fn runtime_path(mut self, path: impl Into<String>) -> Self {
        self.runtime_path = path.into();
        self
    }

    /// Whether to tell cargo to rerun the build script when a compiled proto changes
    /// (default: yes).
    pub fn emit_rerun_if_changed(mut self, enable: bool) -> Self {
        self.emit_rerun_if_changed = enable;
        self
    }

    /// Also writes the compiled protos, as an encoded `FileDescriptorSet` (imports included),
    /// to `path`: what a reflection service serves, e.g. `tonic-reflection`'s
    /// `register_encoded_file_descriptor_set(include_bytes!(..))`.
    pub fn file_descriptor_set_path(mut self, path: impl Into<PathBuf>) -> Self {
        self.file_descriptor_set_path = Some(path.into());
        self
    }

    /// Also writes the OpenAPI 3.1 document of each service with `google.api.http` rules to
    /// `dir/<package.Service>.openapi.json` (the same document as the server module's
    /// `OPENAPI`, indented): for API portals, client generators and linters.
    pub fn openapi_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.openapi_dir = Some(dir.into());
        self
    }

    /// Compiles `protos`, looking up imports in `includes`.
    pub fn compile_protos(
        self,
        protos: &[impl AsRef<Path>],
        includes: &[impl AsRef<Path>],
    ) -> io::Result<()> {
        let compiler = parse(protos, includes)?;
        if self.emit_rerun_if_changed {
            for file in compiler.files() {
                if let Some(path) = file.path() {
                    println!("cargo:rerun-if-changed={}", path.display());
                }
            }
        }
        // The `google.api.http` rules, from the encoded set: the decoded one has lost them.
        let rules = rest::read_rules(&compiler.encode_file_descriptor_set())?;
        self.generate(compiler.file_descriptor_set(), &rules)
    }

    /// Generates code from an already-parsed descriptor set. prost-types' descriptors have no
    /// extensions, so methods' `google.api.http` rules are not seen here: compile with
    /// [`compile_protos`](Self::compile_protos) for REST transcoding.
    pub fn compile_fds(self, fds: FileDescriptorSet) -> io::Result<()> {
        self.generate(fds, &HashMap::new())
    }

    fn generate(
        mut self,
        fds: FileDescriptorSet,
        rules: &HashMap<String, rest::HttpRule>,
    ) -> io::Result<()> {
        if let Some(path) = &self.file_descriptor_set_path {
            std::fs::write(path, prost::Message::encode_to_vec(&fds))?;
        }
        let out_dir = match self.out_dir.clone() {
            Some(dir) => dir,
            None => std::env::var_os("OUT_DIR")
                .map(PathBuf::from)
                .ok_or_else(|| io::Error::other("OUT_DIR is not set: call out_dir"))?,
        };
        // The well-known types with their JSON forms, unless the user chose others.
        let chosen = self.extern_paths.clone();
        let user_chose = |proto_path: &str| {
            chosen
                .iter()
                .any(|(chosen, _)| proto_path.starts_with(chosen.as_str()))
        };
        if !user_chose(json::WELL_KNOWN_PACKAGE) {
            self.prost.compile_well_known_types();
            for name in json::WELL_KNOWN_TYPES {
                let proto_path = format!("{}.{name}", json::WELL_KNOWN_PACKAGE);
                if !user_chose(&proto_path) {
                    let rust_path = format!("{}::types::{name}", self.runtime_path);
                    self.prost.extern_path(&proto_path, &rust_path);
                    self.extern_paths.push((proto_path, rust_path));
                }
            }
        }
        let services = if self.build_server || self.openapi_dir.is_some() {
            rest::generate(&fds, rules)?
        } else {
            Default::default()
        };
        if let Some(dir) = &self.openapi_dir {
            std::fs::create_dir_all(dir)?;
            for (name, generated) in &services {
                std::fs::write(dir.join(format!("{name}.openapi.json")), &generated.openapi)?;
            }
        }
        if self.build_server {
            let runtime = syn::parse_str::<syn::Path>(&self.runtime_path).map_err(|error| {
                io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("runtime_path: {error}"),
                )
            })?;
            let http_rules = services
                .into_iter()
                .map(|(name, generated)| (name, generated.code))
                .collect();
            self.prost
                .service_generator(Box::new(service::ServerGenerator::new(
                    runtime,
                    std::mem::take(&mut self.spawned_methods),
                    http_rules,
                )));
        }
        // Extensions as fields, in what prost-build and the JSON impls see; the descriptor set
        // written above stays as compiled.
        let mut fds = fds;
        let chosen = &self.extern_paths;
        extensions::as_fields(&mut fds, |message| {
            !chosen.iter().any(|(proto_path, _)| {
                message == proto_path
                    || message
                        .strip_prefix(proto_path.as_str())
                        .is_some_and(|rest| rest.starts_with('.'))
            })
        });
        self.prost.compile_fds(fds.clone())?;
        json::append_serde_impls(&fds, &out_dir, &self.runtime_path, &self.extern_paths)
    }
}

impl fmt::Debug for Builder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Builder")
            .field("prost", &self.prost)
            .field("build_server", &self.build_server)
            .field("spawned_methods", &self.spawned_methods)
            .field("runtime_path", &self.runtime_path)
            .field("emit_rerun_if_changed", &self.emit_rerun_if_changed)
            .field("file_descriptor_set_path", &self.file_descriptor_set_path)
            .field("openapi_dir", &self.openapi_dir)
            .field("out_dir", &self.out_dir)
            .field("extern_paths", &self.extern_paths)
            .finish()
    }
}
