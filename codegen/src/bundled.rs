//! The protos a user imports to annotate services for REST, shipped with fastgrpc-build so
//! that nothing has to be vendored: `google/api/annotations.proto` (the `google.api.http`
//! option), `google/api/http.proto`, `google/api/httpbody.proto`, and `google/rpc/status.proto`,
//! `code.proto` and `error_details.proto` (the error model REST answers carry). They are
//! googleapis' files as published, under the Apache License 2.0 (`proto/LICENSE`).
//!
//! They are compiled into the crate, so they are found wherever the build script runs, and they
//! come after the user's include paths: a project that vendors its own copies gets those.

use protox::Error;
use protox::file::{File, FileResolver};

/// The packages of the bundled files, as prost-build names them.
pub(crate) const PACKAGES: &[&str] = &[".google.api", ".google.rpc"];

/// Each bundled file: its import name and its text.
const FILES: &[(&str, &str)] = &[
    (
        "google/api/annotations.proto",
        include_str!("../proto/google/api/annotations.proto"),
    ),
    (
        "google/api/http.proto",
        include_str!("../proto/google/api/http.proto"),
    ),
    (
        "google/api/httpbody.proto",
        include_str!("../proto/google/api/httpbody.proto"),
    ),
    (
        "google/rpc/code.proto",
        include_str!("../proto/google/rpc/code.proto"),
    ),
    (
        "google/rpc/error_details.proto",
        include_str!("../proto/google/rpc/error_details.proto"),
    ),
    (
        "google/rpc/status.proto",
        include_str!("../proto/google/rpc/status.proto"),
    ),
];

/// Opens the bundled files by their import names.
#[derive(Debug, Default)]
pub(crate) struct BundledFiles;

impl FileResolver for BundledFiles {
    fn open_file(&self, name: &str) -> Result<File, Error> {
        match FILES.iter().find(|(bundled, _)| *bundled == name) {
            Some((name, source)) => File::from_source(name, source),
            None => Err(Error::file_not_found(name)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_bundled_file_parses_and_its_imports_are_bundled_or_well_known() {
        for (name, _) in FILES {
            let file = BundledFiles.open_file(name).unwrap();
            for import in &file.file_descriptor_proto().dependency {
                let bundled = FILES.iter().any(|(bundled, _)| bundled == import);
                assert!(
                    bundled || import.starts_with("google/protobuf/"),
                    "{name} imports {import}"
                );
            }
        }
        assert!(
            BundledFiles
                .open_file("google/api/missing.proto")
                .unwrap_err()
                .is_file_not_found()
        );
    }
}
