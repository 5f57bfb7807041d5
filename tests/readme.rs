//! The README's "Use it" section, built and run as written: its `Cargo.toml` dependencies,
//! `build.rs` and `src/main.rs` become a crate of their own beside a `fastgrpc` checkout (a
//! link to this repository, where the README's `../fastgrpc` paths point), and the server it
//! builds is called with tonic's client. Also checks, with `cargo tree`, that a crate depending
//! on `fastgrpc` alone builds none of the code generator's dependencies.
//!
//! The crates are built in `target/readme/`, kept between runs; the first run compiles their
//! dependencies once.

#![cfg(unix)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use support::tonic_pb::helloworld::HelloRequest;
use support::tonic_pb::helloworld::greeter_client::GreeterClient;

/// The workspace root: the `fastgrpc` repository.
fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ is inside the repository")
        .to_path_buf()
}

/// The code blocks of the README's "Use it" section, by the file their first line names.
fn use_it_blocks() -> (String, String, String) {
    let readme = std::fs::read_to_string(repository().join("README.md")).unwrap();
    let section = readme
        .split("\n## Use it\n")
        .nth(1)
        .expect("the README has a \"Use it\" section");
    let section = section.split("\n## ").next().unwrap();
    let mut blocks = section.split("```").skip(1).step_by(2).map(|block| {
        let (_language, code) = block.split_once('\n').unwrap();
        code.to_owned()
    });
    let mut named = |first_line: &str| {
        let block = blocks.next().expect("three code blocks");
        assert!(
            block.starts_with(first_line),
            "expected the block of {first_line:?}, found {block:?}"
        );
        block
    };
    let manifest = named("# Cargo.toml");
    let build = named("// build.rs");
    let main = named("// src/main.rs");
    (manifest, build, main)
}

/// A new directory for test `name`, holding `fastgrpc` (a link to this repository) and room for
/// crates beside it.
fn sandbox(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("fastgrpc-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::os::unix::fs::symlink(repository(), dir.join("fastgrpc")).unwrap();
    dir
}

/// Writes a crate named `name` into `sandbox` with the given manifest body (after its
/// `[package]` table) and files, and this workspace's lock file, so it builds with the versions
/// the workspace is tested with.
fn write_crate(sandbox: &Path, name: &str, manifest: &str, files: &[(&str, &str)]) -> PathBuf {
    let dir = sandbox.join(name);
    std::fs::create_dir_all(dir.join("src")).unwrap();
    let package = format!(
        "[package]\nname = \"{name}\"\nversion = \"0.1.0\"\nedition = \"2024\"\npublish = false\n\n"
    );
    std::fs::write(dir.join("Cargo.toml"), package + manifest).unwrap();
    std::fs::copy(repository().join("Cargo.lock"), dir.join("Cargo.lock")).unwrap();
    for (path, text) in files {
        let path = dir.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    dir
}

fn cargo(dir: &Path) -> Command {
    let mut command = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    command
        .current_dir(dir)
        .env("CARGO_TARGET_DIR", repository().join("target/readme"));
    command
}

/// Runs `command` and gives back its standard output, failing with its standard error.
fn output(command: &mut Command) -> String {
    let output = command.output().expect("cargo runs");
    assert!(
        output.status.success(),
        "{command:?} failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

/// Kills the README's server when the test ends, however it ends.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_readme_example_builds_and_answers() {
    let (manifest, build, main) = use_it_blocks();
    let sandbox = sandbox("readme");
    let proto = std::fs::read_to_string(repository().join("proto/helloworld.proto")).unwrap();
    let app = write_crate(
        &sandbox,
        "readme-app",
        &manifest,
        &[
            ("build.rs", &build),
            ("src/main.rs", &main),
            ("proto/helloworld.proto", &proto),
        ],
    );
    output(cargo(&app).args(["build", "--quiet"]));
    // The README's server listens on 127.0.0.1:50051: another server there would answer in its
    // place (the example greeter answers the same), so the port must be free first.
    drop(
        std::net::TcpListener::bind("127.0.0.1:50051")
            .expect("127.0.0.1:50051, the README's port, is free for its server"),
    );
    let binary = repository().join("target/readme/debug/readme-app");
    let mut server = Running(
        Command::new(&binary)
            .stdout(Stdio::null())
            .spawn()
            .expect("the README's server starts"),
    );

    // Wait (bounded) until it answers.
    let started = Instant::now();
    let mut client = loop {
        match GreeterClient::connect("http://127.0.0.1:50051").await {
            Ok(client) => break client,
            Err(error) => {
                if let Some(status) = server.0.try_wait().unwrap() {
                    panic!("the README's server exited ({status}) before answering");
                }
                assert!(
                    started.elapsed() < Duration::from_secs(30),
                    "the README's server did not answer on 127.0.0.1:50051 in 30 s: {error}"
                );
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    };
    let reply = client
        .say_hello(HelloRequest {
            name: "Ferris".into(),
        })
        .await
        .expect("the README's server answers")
        .into_inner();
    assert_eq!(reply.message, "Hello Ferris!");
    curl_as_the_readme_shows().await;
    assert!(
        server.0.try_wait().unwrap().is_none(),
        "the answer came from the README's server, which is still running"
    );
    drop(server);
    let _ = std::fs::remove_dir_all(&sandbox);
}

/// The README's curl line (JSON over the Connect protocol, HTTP/1.1), sent as curl sends it to
/// the server on 127.0.0.1:50051, answers what the README's comment under it says.
async fn curl_as_the_readme_shows() {
    let readme = std::fs::read_to_string(repository().join("README.md")).unwrap();
    let block = readme
        .split("```")
        .find(|block| block.contains("curl "))
        .expect("the README shows a curl line");
    let line = block.replace("\\\n", " ");
    let between = |start: &str| {
        let rest = &line[line
            .find(start)
            .unwrap_or_else(|| panic!("{start} in {line}"))
            + start.len()..];
        rest[..rest.find('\'').unwrap()].to_owned()
    };
    let header = between("-H '");
    let (name, value) = header.split_once(": ").unwrap();
    assert_eq!(name, "content-type");
    let body = between("-d '");
    let url = line
        .split_whitespace()
        .find(|word| word.starts_with("http://127.0.0.1:50051/"))
        .expect("the curl line's URL");
    let path = &url["http://127.0.0.1:50051".len()..];
    let expected = line
        .lines()
        .find_map(|line| line.trim().strip_prefix("# "))
        .expect("the answer, in a comment under the curl line");
    let request = support::http1::request(
        "POST",
        path,
        value,
        &[("connection", "close")],
        body.as_bytes(),
    );
    let raw = support::http1::exchange("127.0.0.1:50051".parse().unwrap(), &request).await;
    let response = support::http1::responses(&raw).remove(0);
    assert_eq!(response.status, 200, "{response:?}");
    assert_eq!(std::str::from_utf8(&response.body).unwrap(), expected);
}

#[test]
fn a_crate_using_only_fastgrpc_builds_no_code_generator() {
    let sandbox = sandbox("runtime-only");
    let user = write_crate(
        &sandbox,
        "runtime-only",
        "[dependencies]\nfastgrpc = { path = \"../fastgrpc\" }\n",
        &[("src/lib.rs", "pub use fastgrpc;\n")],
    );
    // What building the crate compiles: normal and build dependencies, build scripts included.
    let tree = output(cargo(&user).args([
        "tree",
        "--edges",
        "normal,build",
        "--prefix",
        "none",
        "--format",
        "{p}",
    ]));
    let packages: std::collections::BTreeSet<&str> = tree
        .lines()
        .map(|line| line.trim_end_matches(" (*)"))
        .filter(|line| !line.is_empty())
        .collect();
    for generator in [
        "protox",
        "prost-build",
        "tonic-build",
        "tonic-prost-build",
        "fastgrpc-build",
    ] {
        assert!(
            !packages
                .iter()
                .any(|package| package.starts_with(&format!("{generator} "))),
            "a crate using only fastgrpc builds {generator}:\n{tree}"
        );
    }
    // The figure the issue notes report (itself and fastgrpc not counted).
    println!(
        "a crate using only fastgrpc builds {} packages",
        packages.len() - 2
    );
    let _ = std::fs::remove_dir_all(&sandbox);
}
