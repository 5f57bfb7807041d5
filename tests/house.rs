//! The house keeps its layers: every `crate::` path in a runtime module names a module of a
//! lower layer, as the layer table of `docs/ARCHITECTURE.md` ("Layers") lists them, bottom
//! first. So no import runs upward and no two modules import each other, however long the way
//! round; and a new module must be given its place in the table before it builds into the
//! house. Paths in tests (`tests.rs` files, `#[cfg(test)] mod tests`) and in the exported
//! macros (`$crate::`) are not the house's and are not read.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The workspace root: the `fastgrpc` repository.
fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ is inside the repository")
        .to_path_buf()
}

/// The table's rows, bottom first: each row's number and its modules. A row named `top` holds
/// the façades (`lib`, `codegen`, `internals`), which only re-export: they may name anything,
/// and nothing is checked of them.
fn layers() -> (BTreeMap<String, usize>, BTreeSet<String>) {
    let architecture = std::fs::read_to_string(repository().join("docs/ARCHITECTURE.md")).unwrap();
    let section = architecture
        .split("\n## Layers\n")
        .nth(1)
        .expect("docs/ARCHITECTURE.md has a \"## Layers\" section");
    let table = section
        .split("```text\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("the Layers section has a ```text block");
    let mut levels = BTreeMap::new();
    let mut top = BTreeSet::new();
    for line in table.lines().filter(|line| !line.trim().is_empty()) {
        let (row, modules) = line
            .split_once(':')
            .unwrap_or_else(|| panic!("a layer row is `N: modules` or `top: modules`: {line}"));
        for module in modules.split_whitespace() {
            if row.trim() == "top" {
                top.insert(module.to_string());
            } else {
                let level: usize = row.trim().parse().expect("a layer's number");
                assert!(
                    levels.insert(module.to_string(), level).is_none(),
                    "{module} is in two layers"
                );
            }
        }
    }
    (levels, top)
}

/// The top-level module each `.rs` file under `src/` belongs to, with its text.
fn sources() -> Vec<(String, PathBuf, String)> {
    fn walk(dir: &Path, files: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, files);
            } else if path.extension().is_some_and(|ext| ext == "rs") {
                files.push(path);
            }
        }
    }
    let src = repository().join("src");
    let mut files = Vec::new();
    walk(&src, &mut files);
    files
        .into_iter()
        .filter(|path| path.file_name().is_some_and(|name| name != "tests.rs"))
        .map(|path| {
            let relative = path.strip_prefix(&src).unwrap();
            let first = relative.components().next().unwrap().as_os_str();
            let module = first.to_str().unwrap().trim_end_matches(".rs").to_string();
            let text = std::fs::read_to_string(&path).unwrap();
            (module, relative.to_path_buf(), text)
        })
        .collect()
}

/// `text` without comments and without its `#[cfg(test)] mod tests { … }` block.
fn code_of(text: &str) -> String {
    let mut code: String = text
        .lines()
        .map(|line| line.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n");
    if let Some(start) = code.find("#[cfg(test)]\nmod tests {") {
        let open = start + code[start..].find('{').unwrap();
        let mut depth = 0;
        let mut end = code.len();
        for (at, c) in code[open..].char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = open + at + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        code.replace_range(start..end, "");
    }
    code
}

/// The top-level modules `code` names with `crate::` (in `use` lines and in paths), not
/// `$crate::`.
fn named_modules(code: &str) -> BTreeSet<String> {
    let mut named = BTreeSet::new();
    let mut rest = code;
    while let Some(at) = rest.find("crate::") {
        let before = &rest[..at];
        rest = &rest[at + "crate::".len()..];
        if before.ends_with('$') {
            continue;
        }
        if let Some(group) = rest.strip_prefix('{') {
            // `crate::{a, b::c, d::{e, f}}`: the first segment of each path at depth 0.
            let mut depth = 0;
            let mut segment_start = true;
            for (at, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => segment_start = true,
                    c if segment_start && (c.is_alphanumeric() || c == '_') => {
                        let name: String = group[at..]
                            .chars()
                            .take_while(|c| c.is_alphanumeric() || *c == '_')
                            .collect();
                        named.insert(name);
                        segment_start = false;
                    }
                    _ => {}
                }
            }
        } else {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            named.insert(name);
        }
    }
    named
}

#[test]
fn every_import_runs_down_the_layers_of_architecture_md() {
    let (levels, top) = layers();
    let sources = sources();
    let modules: BTreeSet<&str> = sources.iter().map(|(module, ..)| module.as_str()).collect();
    let unplaced: Vec<&&str> = modules
        .iter()
        .filter(|module| !levels.contains_key(**module) && !top.contains(**module))
        .collect();
    assert!(
        unplaced.is_empty(),
        "modules without a layer in docs/ARCHITECTURE.md: {unplaced:?}"
    );
    let mut upward = Vec::new();
    for (module, file, text) in &sources {
        let Some(&level) = levels.get(module) else {
            continue;
        };
        for named in named_modules(&code_of(text)) {
            if named == *module || !modules.contains(named.as_str()) {
                continue;
            }
            match levels.get(&named) {
                Some(&below) if below < level => {}
                _ => upward.push(format!("{} names crate::{named}", file.display())),
            }
        }
    }
    assert!(
        upward.is_empty(),
        "imports that do not run down the layers of docs/ARCHITECTURE.md:\n{}",
        upward.join("\n")
    );
}

#[test]
fn the_reader_finds_grouped_and_plain_paths_and_skips_comments_tests_and_macros() {
    let code = code_of(
        "use crate::a::X;\nuse crate::{b, c::{D, E}, d::F};\n// crate::comment\n\
         $crate::macro_path\nfn f() { crate::e::g() }\n#[cfg(test)]\nmod tests {\n    \
         use crate::in_test;\n}\n",
    );
    let named: Vec<String> = named_modules(&code).into_iter().collect();
    assert_eq!(named, ["a", "b", "c", "d", "e"]);
}

/// Every file of the repository (outside `target/` and `.git/`), as paths from its root.
fn repository_files() -> Vec<String> {
    fn walk(root: &Path, dir: &Path, files: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().to_string();
            if name == "target" || name == ".git" || name == "node_modules" {
                continue;
            }
            let relative = path
                .strip_prefix(root)
                .unwrap()
                .to_string_lossy()
                .to_string();
            if path.is_dir() {
                files.push(format!("{relative}/"));
                walk(root, &path, files);
            } else {
                files.push(relative);
            }
        }
    }
    let root = repository();
    let mut files = Vec::new();
    walk(&root, &root, &mut files);
    files
}

/// What `docs/ARCHITECTURE.md` names in backticks: files and folders (ending in `.rs`, `.md`,
/// `.sh` or `/`), paths into the code (`Type::name`, `module::name`), and single names.
fn backticked_in_the_map() -> Vec<String> {
    let map = std::fs::read_to_string(repository().join("docs/ARCHITECTURE.md")).unwrap();
    map.split('`')
        .skip(1)
        .step_by(2)
        .filter(|token| !token.contains(char::is_whitespace) && !token.is_empty())
        .map(str::to_owned)
        .collect()
}

/// Whether `src/` defines `name` as a function, type, trait, module, constant or variant.
fn defined(sources: &[(String, PathBuf, String)], name: &str) -> bool {
    let definitions = [
        format!("fn {name}("),
        format!("fn {name}<"),
        format!("struct {name}"),
        format!("enum {name}"),
        format!("trait {name}"),
        format!("type {name}"),
        format!("mod {name}"),
        format!("const {name}:"),
        format!("    {name}("),
        format!("    {name} {{"),
        format!("    {name},"),
    ];
    sources.iter().any(|(_, file, text)| {
        file.file_stem().is_some_and(|stem| stem == name)
            || definitions
                .iter()
                .any(|definition| text.contains(definition.as_str()))
    })
}

/// Names the map gives in backticks that are not the code's: Cargo features, and what the
/// standard library calls a future that waits.
const NOT_THE_CODE_S: &[&str] = &["opentelemetry", "Pending", "tls"];

#[test]
fn every_file_and_name_the_map_gives_exists() {
    let files = repository_files();
    let sources = sources();
    let crates: Vec<String> = files
        .iter()
        .filter(|file| file.ends_with("Cargo.toml"))
        .filter_map(|file| std::fs::read_to_string(repository().join(file)).ok())
        .filter_map(|manifest| {
            let name = manifest.split("\nname = \"").nth(1)?;
            Some(name.split('"').next()?.to_owned())
        })
        .collect();
    let mut missing = Vec::new();
    for token in backticked_in_the_map() {
        let is_path = [".rs", ".md", ".sh", "/"]
            .iter()
            .any(|end| token.ends_with(end))
            && token
                .chars()
                .all(|c| c.is_alphanumeric() || "_-./".contains(c));
        if is_path {
            // Relative to the repository, to `src/`, or to a folder the map's row names.
            if !files
                .iter()
                .any(|file| file == &token || file.ends_with(&format!("/{token}")))
            {
                missing.push(token);
            }
            continue;
        }
        if !token
            .chars()
            .all(|c| c.is_alphanumeric() || c == '_' || c == ':')
        {
            continue; // a header, a content type, a chain of steps: not a name
        }
        if NOT_THE_CODE_S.contains(&token.as_str()) {
            continue;
        }
        // A number, or a status code or constant in capitals.
        if token.chars().next().is_some_and(char::is_numeric)
            || token.chars().all(|c| c.is_ascii_uppercase() || c == '_')
        {
            continue;
        }
        // A crate, or an example.
        let stem = |file: &String| {
            Path::new(file.trim_end_matches('/'))
                .file_stem()
                .is_some_and(|stem| stem == token.as_str())
        };
        if crates.contains(&token) || files.iter().any(stem) {
            continue;
        }
        let segments: Vec<&str> = token.split("::").collect();
        if segments.iter().any(|segment| !defined(&sources, segment)) {
            missing.push(token);
        }
    }
    assert!(
        missing.is_empty(),
        "docs/ARCHITECTURE.md names what is not in the repository: {missing:?}"
    );
}
