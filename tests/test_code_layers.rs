//! The layers the code stands in (CONTRIBUTING.md, "Layers"): the crates
//! of the workspace, lowest first, each using only crates below it, and
//! inside every crate a module graph without a cycle.
//!
//! The graph is drawn from the code itself: `use` declarations and paths
//! (`crate::`, `super::`, `self::`, a parent naming its child module).
//! Tests are left out (a `tests.rs` file, a `#[cfg(test)] mod tests` at the
//! end of a file): they may look at a module from any side. A child using
//! its parent counts like any other import (so a parent that uses its
//! children keeps what they share in a child of its own, as
//! `transport/shared.rs` does); a parent's `pub use child::Item` does not:
//! it publishes the child's item, it does not use it.
//! `cargo test --test main test_code_layers -- --nocapture` prints both graphs.

use crate::common::sources;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::Path;

/// The crates, lowest layer first: a crate may depend only on crates
/// before it. The last is the command line, at the root of the workspace.
const LAYERS: &[(&str, &str)] = &[
    ("aea-ground", "crates/ground"),
    ("aea-protocol", "crates/protocol"),
    ("aea-policy", "crates/policy"),
    ("aea-store", "crates/store"),
    ("aea-git", "crates/git"),
    ("aea-bridges", "crates/bridges"),
    ("aea-harness", "crates/harness"),
    ("aea", "."),
];

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The module path of a source file under `src/` (`""` for the crate root,
/// `mailbox::read` for `mailbox/read.rs` and `mailbox` for `mailbox/mod.rs`).
fn module_of(src: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(src).unwrap().with_extension("");
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    if parts.len() == 1 && (parts[0] == "lib" || parts[0] == "main") {
        parts.clear();
    }
    parts.join("::")
}

/// The code of a file without comments, string literals and its tests.
fn product_code(text: &str) -> String {
    let text = match text.find("#[cfg(test)]\nmod tests {") {
        Some(at) => &text[..at],
        None => text,
    };
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '/' if chars.peek() == Some(&'/') => {
                // A comment, to the end of the line.
                for c in chars.by_ref() {
                    if c == '\n' {
                        out.push('\n');
                        break;
                    }
                }
            }
            'r' if matches!(chars.peek(), Some('#' | '"')) && !out.ends_with(is_ident) => {
                // A raw string: r"…", r#"…"#.
                let mut hashes = 0;
                while chars.peek() == Some(&'#') {
                    chars.next();
                    hashes += 1;
                }
                if chars.next() != Some('"') {
                    continue;
                }
                let mut closing = 0;
                let mut in_quote = false;
                for c in chars.by_ref() {
                    if in_quote && c == '#' {
                        closing += 1;
                    } else {
                        in_quote = c == '"';
                        closing = 0;
                    }
                    if in_quote && closing == hashes {
                        break;
                    }
                }
                out.push_str("\"\"");
            }
            '\'' => {
                // A char literal ('"', '\'', '\u{1b}'), or a lifetime.
                let ahead: String = chars.clone().take(12).collect();
                let literal = if let Some(escaped) = ahead.strip_prefix('\\') {
                    escaped.find('\'').map(|at| at + 2)
                } else {
                    ahead.chars().nth(1).filter(|c| *c == '\'').map(|_| 2)
                };
                match literal {
                    Some(len) => {
                        for _ in 0..len {
                            chars.next();
                        }
                        out.push_str("' '");
                    }
                    None => out.push(c),
                }
            }
            '"' => {
                // A string: its text is not code.
                while let Some(c) = chars.next() {
                    match c {
                        '\\' => {
                            chars.next();
                        }
                        '"' => break,
                        _ => {}
                    }
                }
                out.push_str("\"\"");
            }
            _ => out.push(c),
        }
    }
    out
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Expands the tree of a `use` declaration (`a::{b, c::{d, e as f}}`) into
/// its paths.
fn expand_use(tree: &str) -> Vec<String> {
    let tree = tree.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut out = Vec::new();
    expand_into("", &tree, &mut out);
    out
}

fn expand_into(prefix: &str, tree: &str, out: &mut Vec<String>) {
    let tree = tree.trim();
    if let (Some(open), Some(close)) = (tree.find('{'), tree.rfind('}'))
        && open < close
    {
        let head = format!("{prefix}{}", tree[..open].trim());
        let inner = &tree[open + 1..close];
        let mut depth = 0;
        let mut start = 0;
        for (i, c) in inner.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    expand_into(&head, &inner[start..i], out);
                    start = i + 1;
                }
                _ => {}
            }
        }
        expand_into(&head, &inner[start..], out);
    } else if !tree.is_empty() {
        let path = tree.split(" as ").next().unwrap_or(tree).trim();
        out.push(format!("{prefix}{path}"));
    }
}

/// Every path the code names: the trees of its `use` declarations and the
/// `a::b::c` paths elsewhere.
fn named_paths(code: &str) -> Vec<String> {
    let mut paths = Vec::new();
    let mut rest = code;
    // `use` trees first, then cut them out.
    let mut others = String::new();
    while let Some(at) = find_word(rest, "use") {
        others.push_str(&rest[..at]);
        let after = &rest[at + 3..];
        let end = after.find(';').unwrap_or(after.len());
        // A parent's `pub use child::Item` publishes its child's item: a
        // facade, not a use of the child by the parent's own code.
        let before = others.trim_end();
        if !(before.ends_with("pub") || before.ends_with("pub(crate)")) {
            paths.extend(expand_use(&after[..end]));
        }
        rest = &after[(end + 1).min(after.len())..];
    }
    others.push_str(rest);
    let chars: Vec<(usize, char)> = others.char_indices().collect();
    let mut i = 0;
    while i < chars.len() {
        let (at, c) = chars[i];
        let starts = is_ident(c) && (i == 0 || !is_ident(chars[i - 1].1) && chars[i - 1].1 != ':');
        if !starts {
            i += 1;
            continue;
        }
        let mut end;
        let mut j = i;
        // ident(::ident)*
        loop {
            while j < chars.len() && is_ident(chars[j].1) {
                j += 1;
            }
            end = chars.get(j).map_or(others.len(), |c| c.0);
            if others[end..].starts_with("::")
                && others[end + 2..].starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
            {
                j += 2;
                continue;
            }
            break;
        }
        let path = &others[at..end];
        if path.contains("::") {
            paths.push(path.to_string());
        }
        i = j.max(i + 1);
    }
    paths
}

/// Where the word `word` (a keyword) starts a statement in `text`.
fn find_word(text: &str, word: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(found) = text[from..].find(word) {
        let at = from + found;
        let before = text[..at].chars().next_back();
        let after = text[at + word.len()..].chars().next();
        if before.is_none_or(|c| !is_ident(c) && c != ':') && after.is_some_and(char::is_whitespace)
        {
            return Some(at);
        }
        from = at + word.len();
    }
    None
}

/// The module a path names from inside `module`, if it is one of `known`.
fn resolve(module: &str, path: &str, known: &BTreeSet<String>) -> Option<String> {
    let mut segs: Vec<&str> = path.split("::").collect();
    let mut base: Vec<String> = match segs[0] {
        "crate" => {
            segs.remove(0);
            Vec::new()
        }
        "self" => {
            segs.remove(0);
            split(module)
        }
        "super" => {
            // `super` of `a::b` (a/b.rs, or a/b/mod.rs) is `a`.
            let mut base = split(module);
            while segs.first() == Some(&"super") {
                segs.remove(0);
                base.pop();
            }
            base
        }
        first => {
            let mut child = split(module);
            child.push(first.to_string());
            if !known.contains(&child.join("::")) {
                return None;
            }
            segs.remove(0);
            child
        }
    };
    let mut found = None;
    if !base.is_empty() {
        found = Some(base.join("::"));
    }
    for seg in segs {
        base.push(seg.to_string());
        let name = base.join("::");
        if known.contains(&name) {
            found = Some(name);
        } else {
            break;
        }
    }
    found
}

fn split(module: &str) -> Vec<String> {
    if module.is_empty() {
        Vec::new()
    } else {
        module.split("::").map(str::to_string).collect()
    }
}

type Graph = BTreeMap<String, BTreeSet<String>>;

/// The module graph of the crate whose sources are in `src`.
fn module_graph(src: &Path) -> Graph {
    let mut files = Vec::new();
    sources(src, &mut files);
    let known: BTreeSet<String> = files.iter().map(|f| module_of(src, f)).collect();
    let mut graph = Graph::new();
    for file in &files {
        let module = module_of(src, file);
        if file.file_name().is_some_and(|n| n == "tests.rs") || module.is_empty() {
            continue;
        }
        let code = product_code(&std::fs::read_to_string(file).unwrap());
        let targets = graph.entry(module.clone()).or_default();
        for path in named_paths(&code) {
            if let Some(to) = resolve(&module, &path, &known)
                && to != module
                && !to.is_empty()
            {
                targets.insert(to);
            }
        }
    }
    graph
}

/// The cycles of a graph: its strongly connected parts of more than one
/// module (Tarjan).
fn cycles(graph: &Graph) -> Vec<Vec<String>> {
    struct State<'a> {
        graph: &'a Graph,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        found: Vec<Vec<String>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a str) {
        let n = s.index.len();
        s.index.insert(v, n);
        s.low.insert(v, n);
        s.stack.push(v);
        s.on_stack.insert(v);
        for w in s.graph.get(v).into_iter().flatten() {
            let w = w.as_str();
            if !s.index.contains_key(w) {
                visit(s, w);
                let lw = s.low[w];
                let lv = s.low.get_mut(v).unwrap();
                *lv = (*lv).min(lw);
            } else if s.on_stack.contains(w) {
                let iw = s.index[w];
                let lv = s.low.get_mut(v).unwrap();
                *lv = (*lv).min(iw);
            }
        }
        if s.low[v] == s.index[v] {
            let mut part = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                part.push(w.to_string());
                if w == v {
                    break;
                }
            }
            if part.len() > 1 {
                part.sort();
                s.found.push(part);
            }
        }
    }
    let mut s = State {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        found: Vec::new(),
    };
    for v in graph.keys() {
        if !s.index.contains_key(v.as_str()) {
            visit(&mut s, v);
        }
    }
    s.found
}

/// The `aea-*` crates a crate's Cargo.toml depends on (normal dependencies).
fn crate_deps(dir: &Path) -> BTreeSet<String> {
    let text = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
    let table: toml::Table = toml::from_str(&text).unwrap();
    table
        .get("dependencies")
        .and_then(|d| d.as_table())
        .map(|d| {
            d.keys()
                .filter(|k| k.starts_with("aea-"))
                .cloned()
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn crates_use_only_the_layers_below_them() {
    let mut printed = String::new();
    for (i, (name, dir)) in LAYERS.iter().enumerate() {
        let deps = crate_deps(&root().join(dir));
        let _ = writeln!(
            printed,
            "{name} -> {}",
            deps.iter().cloned().collect::<Vec<_>>().join(" ")
        );
        for dep in &deps {
            let at = LAYERS.iter().position(|(n, _)| n == dep);
            assert!(
                at.is_some_and(|at| at < i),
                "{name} depends on {dep}, which is not a layer below it: see CONTRIBUTING.md, \"Layers\""
            );
        }
    }
    // Every crate of the workspace is a layer.
    for entry in std::fs::read_dir(root().join("crates")).unwrap() {
        let dir = entry.unwrap().path();
        let rel = format!("crates/{}", dir.file_name().unwrap().to_string_lossy());
        assert!(
            LAYERS.iter().any(|(_, d)| *d == rel),
            "{rel} is not in the list of layers of tests/test_code_layers.rs"
        );
    }
    println!("crates, lowest layer first:\n{printed}");
}

#[test]
fn no_crate_has_a_cycle_of_modules() {
    let mut problems = Vec::new();
    for (name, dir) in LAYERS {
        let graph = module_graph(&root().join(dir).join("src"));
        println!("{name}:");
        for (from, to) in &graph {
            if !to.is_empty() {
                println!(
                    "  {from} -> {}",
                    to.iter().cloned().collect::<Vec<_>>().join(" ")
                );
            }
        }
        for cycle in cycles(&graph) {
            problems.push(format!("{name}: {}", cycle.join(" <-> ")));
        }
    }
    assert!(
        problems.is_empty(),
        "modules that import each other, directly or around a loop (move what both need below both):\n{}",
        problems.join("\n")
    );
}

#[test]
fn the_graph_is_read_from_the_code() {
    let mut known = BTreeSet::new();
    for m in ["a", "a::b", "c", "c::d"] {
        known.insert(m.to_string());
    }
    assert_eq!(
        expand_use("crate::{a::b::{X, Y as Z}, c}"),
        ["crate::a::b::X", "crate::a::b::Y", "crate::c"]
    );
    let code = "use crate::{a::b::X, c};\nfn f() { crate::c::d::g(); super::x(); }\n";
    let named = named_paths(code);
    let resolved: BTreeSet<_> = named
        .iter()
        .filter_map(|p| resolve("a", p, &known))
        .collect();
    assert_eq!(
        resolved,
        ["a::b", "c", "c::d"]
            .map(String::from)
            .into_iter()
            .collect()
    );
    // A parent publishing its child's item is no use of it; using it is.
    assert!(named_paths("pub use d::T;\npub(crate) use d::U;\n").is_empty());
    assert_eq!(named_paths("use d::T;\n"), ["d::T"]);
    // A path that ends in a type names its module (`Box<read::Listed>`).
    assert_eq!(named_paths("x: Box<d::T>,\n"), ["d::T"]);
    // A child named by its parent is an edge; a type is not a module.
    assert_eq!(resolve("c", "d::T", &known).as_deref(), Some("c::d"));
    assert_eq!(resolve("c", "Vec::new", &known), None);
    // `super::` from a folder's file is the folder's module.
    assert_eq!(resolve("c::d", "super::T", &known).as_deref(), Some("c"));
    // Text in strings and comments is not code.
    let code = product_code(concat!(
        "let s = \"use crate::c::{x\"; // use crate::c;\n",
        "let r = r#\"use a::b;\"#;\n",
        "let q = '\"'; fn f<'a>() { crate::c::g(); }\n",
    ));
    assert_eq!(named_paths(&code), ["crate::c::g"], "{code}");
    let cyclic: Graph =
        [("a", "c"), ("c", "a"), ("c", "x")]
            .iter()
            .fold(Graph::new(), |mut g, (f, t)| {
                g.entry(f.to_string()).or_default().insert(t.to_string());
                g
            });
    assert_eq!(
        cycles(&cyclic),
        vec![vec!["a".to_string(), "c".to_string()]]
    );
}
