//! The layout rules of the book's "Layout of the code" (`docs/src/layout.md`) that clippy cannot
//! express, checked on the sources: only `repo` uses git2, and only the
//! modules that clippy.toml's rules are written for may lift them.

use crate::common::sources;
use std::path::Path;

/// (file relative to its crate's `src/`, text) of every source file of the
/// workspace: the command line's `src/` and each layer's `crates/*/src/`.
fn all_sources() -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut dirs = vec![root.join("src")];
    for entry in std::fs::read_dir(root.join("crates")).unwrap() {
        dirs.push(entry.unwrap().path().join("src"));
    }
    let mut out = Vec::new();
    for src in dirs {
        let mut files = Vec::new();
        sources(&src, &mut files);
        files.sort();
        for p in files {
            let text = std::fs::read_to_string(&p).unwrap();
            let name = p.strip_prefix(&src).unwrap().to_string_lossy().into_owned();
            out.push((name, text));
        }
    }
    assert!(out.len() > 30, "found only {} source files", out.len());
    out
}

/// Lines of code (comments left out) of `text` containing `needle`.
fn code_lines<'a>(text: &'a str, needle: &str) -> Vec<&'a str> {
    text.lines()
        .filter(|l| {
            let code = l.trim_start();
            !code.starts_with("//") && code.contains(needle)
        })
        .collect()
}

#[test]
fn only_repo_uses_git2() {
    let offenders: Vec<String> = all_sources()
        .into_iter()
        .filter(|(name, _)| !name.starts_with("repo/"))
        .filter(|(_, text)| !code_lines(text, "git2").is_empty())
        .map(|(name, _)| name)
        .collect();
    assert!(
        offenders.is_empty(),
        "git2 used outside crates/git/src/repo/ in {offenders:?}: put the git work in `repo` and call it"
    );
}

/// The lints (and lint groups) that keep the layout rules, as they may be
/// named in an `allow`/`expect`: by name, through a group that holds them
/// (`clippy::restriction` holds print_*, exit and dbg_macro;
/// `clippy::style` holds disallowed_methods), or all at once.
const LAYOUT_LINTS: [&str; 11] = [
    "clippy::disallowed_methods",
    "clippy::disallowed_types",
    "clippy::print_stdout",
    "clippy::print_stderr",
    "clippy::exit",
    "clippy::dbg_macro",
    "clippy::restriction",
    "clippy::style",
    "clippy::all",
    "clippy",
    "warnings",
];

/// The lint names inside every `allow(…)` / `expect(…)` of `text` (also
/// inside `cfg_attr`, over several lines), comments left out.
fn lifted_lints(text: &str) -> Vec<String> {
    let code: String = text
        .lines()
        .map(|l| l.split("//").next().unwrap_or_default())
        .collect::<Vec<_>>()
        .join("\n");
    let mut names = Vec::new();
    for opener in ["allow(", "expect("] {
        for (at, _) in code.match_indices(opener) {
            let inside = &code[at + opener.len()..];
            let end = inside.find(')').unwrap_or(inside.len());
            names.extend(
                inside[..end]
                    .split(',')
                    .map(|n| n.split_whitespace().collect::<String>())
                    .filter(|n| !n.is_empty() && !n.starts_with("reason")),
            );
        }
    }
    names
}

#[test]
fn only_env_and_printer_lift_the_layout_lints() {
    // Each file allowed to lift a lint, and why.
    let allowed = |name: &str, lint: &str| match lint {
        "clippy::disallowed_methods" => {
            // commands/schemas.rs is a test-only module (`#[cfg(test)]`):
            // its AEA_UPDATE_SCHEMAS switch is the test's, not the product's.
            name == "env.rs" || name == "printer.rs" || name == "commands/schemas.rs"
        }
        _ => false,
    };
    let mut offenders = Vec::new();
    for (name, text) in all_sources() {
        for lint in lifted_lints(&text) {
            if LAYOUT_LINTS.contains(&lint.as_str()) && !allowed(&name, &lint) {
                offenders.push(format!("{name}: {lint}"));
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "layout lints lifted outside env.rs/printer.rs: {offenders:?}; read the environment through Env, write through Printer, return an ExitCode"
    );
}

#[test]
fn lifted_lints_are_found_however_they_are_written() {
    let found = lifted_lints(
        "#[allow(unused, clippy::print_stdout)]\n#![allow(clippy::restriction)]\n\
         #[cfg_attr(all(), allow(\n    clippy::style,\n))]\n// allow(clippy::exit) in a comment\n\
         #[expect(warnings, reason = \"x\")]",
    );
    assert_eq!(
        found,
        [
            "unused",
            "clippy::print_stdout",
            "clippy::restriction",
            "clippy::style",
            "warnings"
        ]
    );
}

#[test]
fn the_lints_are_configured() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let cargo = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    for lint in ["print_stdout", "print_stderr", "exit"] {
        assert!(
            cargo.contains(&format!("{lint} = \"warn\"")),
            "Cargo.toml [workspace.lints.clippy] lost {lint}"
        );
    }
    let clippy = std::fs::read_to_string(root.join("clippy.toml")).unwrap();
    for method in [
        "std::env::var\"",
        "std::env::var_os",
        "std::env::current_dir",
        "std::io::stdout",
        "std::io::stderr",
    ] {
        assert!(clippy.contains(method), "clippy.toml lost {method}");
    }
}

/// notify's macOS backend needs its `macos_fsevent` feature (with
/// `default-features = false` it compiled without the crates that backend
/// uses). Cargo.lock lists those crates exactly when the feature is on, so
/// this fails on Linux too, where the macOS build cannot be run;
/// `.ci/run` also checks notify for aarch64-apple-darwin when it can.
#[test]
fn the_macos_watch_backend_is_built_with_its_crates() {
    let lock =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.lock")).unwrap();
    let notify = lock
        .split("[[package]]")
        .find(|p| p.contains("\nname = \"notify\"\n"))
        .expect("notify is in Cargo.lock");
    assert!(
        notify.contains("\"objc2-core-services\""),
        "notify is built without its FSEvents crates: keep features = [\"macos_fsevent\"] in Cargo.toml"
    );
}

/// A command never borrows from another command: what two commands share
/// is domain (outside `commands/`) or one of the shared edge modules.
#[test]
fn commands_do_not_borrow_from_each_other() {
    const EDGES: [&str; 7] = [
        "context",
        "content",
        "listing",
        "frame",
        "verdict",
        "transfers",
        "signer",
    ];
    let mut offenders = Vec::new();
    for (name, text) in all_sources() {
        let Some(file) = name.strip_prefix("commands/") else {
            continue;
        };
        if file == "mod.rs" || file == "schemas.rs" {
            continue;
        }
        // A file of an edge module's folder (`listing/remember.rs`): its
        // `super::` is that edge, and `super::super::` the commands.
        let in_edge = file
            .split_once('/')
            .is_some_and(|(folder, _)| EDGES.contains(&folder));
        let lines: Vec<String> = if in_edge {
            code_lines(&text, "super::super::")
                .into_iter()
                .map(|l| l.replace("super::super::", "super::"))
                .collect()
        } else {
            code_lines(&text, "super::")
                .into_iter()
                .map(ToString::to_string)
                .collect()
        };
        for line in lines {
            let used = line
                .split("super::")
                .skip(1)
                .flat_map(|rest| {
                    let module: String = rest
                        .chars()
                        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                        .collect();
                    // `super::{Context, content}` lists several.
                    let listed = rest.starts_with('{').then(|| {
                        rest[1..rest.find('}').unwrap_or(rest.len())]
                            .split(',')
                            .map(|m| m.trim().split("::").next().unwrap_or("").to_string())
                            .collect::<Vec<_>>()
                    });
                    listed.unwrap_or_else(|| vec![module])
                })
                .filter(|m| m.chars().next().is_some_and(|c| c.is_ascii_lowercase()))
                .filter(|m| !EDGES.contains(&m.as_str()))
                .collect::<Vec<_>>();
            if !used.is_empty() {
                offenders.push(format!("{name}: {used:?}"));
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "commands borrowing from other commands: {offenders:?}; move what they share into a domain module or an edge module (CONTRIBUTING.md)"
    );
}

/// The names under `.aea/` and in the private state are spelt in one
/// module, `crates/store/src/layout.rs` (SPEC §2): a second spelling elsewhere is how a
/// state file ends up where git writes. Test modules may spell them.
#[test]
fn only_layout_spells_the_names_of_the_inbox_and_the_private_state() {
    let names = [
        "\".aea\"",
        "\".processed\"",
        "\".claims\"",
        "\".approvals\"",
        "\".deferred\"",
        "\".sent-keys\"",
        "\".bridged\"",
        "\".announced\"",
        "\".archive\"",
        "\".seen\"",
        "\".sync\"",
        "\".quarantine\"",
        "\".collabs.json\"",
        "\".installed.json\"",
        "\".agent.log.lock\"",
        "\".gc.lock\"",
        "\".sync.lock\"",
        "\"agent-config.yaml\"",
        "\"agent.log\"",
        "\"monitor.lock\"",
        "\"monitor.pid\"",
        "\"monitor.stop\"",
        "\"migrated.json\"",
        "\"sent-keys\"",
        "\"outgoing\"",
        "\"custody\"",
    ];
    let mut offenders = Vec::new();
    for (name, text) in all_sources() {
        if name == "layout.rs" {
            continue;
        }
        let product = text.split("#[cfg(test)]").next().unwrap_or_default();
        for needle in names {
            for line in code_lines(product, needle) {
                offenders.push(format!("{name}: {}", line.trim()));
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "names of .aea/ or the private state spelt outside crates/store/src/layout.rs (ask `layout::Shared`, `layout::Private`):\n{}",
        offenders.join("\n")
    );
}

/// The book's "Layout of the code" (`docs/src/layout.md`) names every crate
/// of the workspace and every module at the top of each crate, so the map
/// cannot fall behind the code.
#[test]
fn the_code_map_names_every_crate_and_module() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("docs/src/layout.md")).unwrap();
    let start = readme
        .find("# Layout of the code")
        .expect("docs/src/layout.md has a Layout of the code section");
    let block_start = start + readme[start..].find("```").unwrap() + 3;
    let block = &readme[block_start..block_start + readme[block_start..].find("```").unwrap()];
    let words: std::collections::HashSet<&str> = block
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-'))
        .collect();
    let mut missing = Vec::new();
    let mut dirs = vec![root.join("src")];
    for entry in std::fs::read_dir(root.join("crates")).unwrap() {
        let dir = entry.unwrap().path();
        let name = format!("aea-{}", dir.file_name().unwrap().to_string_lossy());
        if !words.contains(name.as_str()) {
            missing.push(name);
        }
        dirs.push(dir.join("src"));
    }
    for dir in dirs {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let file = entry.unwrap().file_name().to_string_lossy().into_owned();
            let module = file.strip_suffix(".rs").unwrap_or(&file);
            if !["lib", "main"].contains(&module) && !words.contains(module) {
                missing.push(format!("{}/{file}", dir.display()));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "docs/src/layout.md \"Layout of the code\" does not name: {missing:?}"
    );
}

/// Integration tests are one binary (`autotests = false`): a file in
/// `tests/` that `tests/main.rs` does not name is never compiled, and its
/// tests never run.
#[test]
fn every_test_file_is_a_module_of_the_test_binary() {
    let tests = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let main = std::fs::read_to_string(tests.join("main.rs")).unwrap();
    for entry in std::fs::read_dir(&tests).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        let Some(module) = name.strip_suffix(".rs") else {
            continue;
        };
        if module != "main" {
            assert!(
                main.lines().any(|l| l == format!("mod {module};")),
                "tests/{name} is not compiled: add `mod {module};` to tests/main.rs"
            );
        }
    }
}
