//! The commands a shell would run if a text were pasted into one.
//!
//! Two readings of the same normalised text, and a hard stop looks at both:
//!
//! - **Parsed**: each line that names a program the stops care about is
//!   parsed with tree-sitter's bash grammar (pipelines, `|&`, subshells,
//!   `{ …; }`, command and process substitution, redirects, assignments,
//!   `export`). The grammar recovers from errors, so prose around a command
//!   still yields the command.
//! - **Words**: the whole text split as a shell splits words (quotes
//!   dropped, operators apart), cut into commands at the operators. This
//!   reading never fails: what the parser cannot make sense of (an
//!   apostrophe in prose opening a quote that never closes) is still read
//!   here, so a parse failure never means "no stop".
//!
//! In both, a variable assigned earlier in the same text is replaced by its
//! value (`x=rm; $x -rf /`) and brace expansion is done (`{rm,-rf,/srv}` is
//! three words).

use std::borrow::Cow;
use std::collections::HashMap;

use tree_sitter::{Node, Parser};

/// A word of a command: a slice of the text, or what expansion made of it.
pub(super) type Word<'a> = Cow<'a, str>;

/// One simple command as a shell would run it.
#[derive(Debug, Default, Clone)]
pub(super) struct Command<'a> {
    /// The words after expansion, quotes removed; the program first.
    pub words: Vec<Word<'a>>,
    /// `NAME=value` assignments in front of it, or made by `export`.
    pub env: Vec<(String, String)>,
    /// Its standard input is a pipe from the command before it.
    pub piped: bool,
    /// An argument, or its standard input, holds a command or process
    /// substitution (`$(…)`, `` `…` ``, `<(…)`) or a here-string.
    pub substituted: bool,
}

/// Lines longer than this are read as words only: a command is one line a
/// person types, and the parser's time grows with what it is given.
const MAX_LINE: usize = 4096;

/// Bytes of lines parsed per text at most; past it, the words reading goes
/// on alone, so a message of many command-like lines costs bounded time.
const MAX_PARSED: usize = 2 * 1024;

/// Brace expansions grow words by product: at most this many from one.
const MAX_EXPANSION: usize = 64;

/// Words of a command the words reading keeps: prose that never reaches
/// an operator runs on for paragraphs.
const MAX_WORDS: usize = 256;

/// The commands of the lines of `text` (normalised) that `wanted` says may
/// hold one, as the parser reads them.
pub(super) fn parsed(text: &str, wanted: impl Fn(&str) -> bool) -> Vec<Command<'static>> {
    // The wanted lines as one document, parsed at once (each call to the
    // parser costs about as much as a line). A line whose quotes do not
    // pair (prose: "it's") loses them, so it cannot swallow the next.
    let mut document = String::new();
    for line in text.lines() {
        if line.len() > MAX_LINE || !wanted(line) {
            continue;
        }
        if document.len() + line.len() > MAX_PARSED {
            break;
        }
        let odd = |q: char| line.chars().filter(|c| *c == q).count() % 2 == 1;
        if odd('\'') || odd('"') || odd('`') {
            document.extend(line.chars().map(|c| {
                if matches!(c, '\'' | '"' | '`') {
                    ' '
                } else {
                    c
                }
            }));
        } else {
            document.push_str(line);
        }
        document.push('\n');
    }
    let mut commands = Vec::new();
    if document.is_empty() {
        return commands;
    }
    // One parser a thread, made once: making one costs more than parsing
    // a few lines.
    thread_local! {
        static PARSER: std::cell::RefCell<Option<Parser>> = const { std::cell::RefCell::new(None) };
    }
    let tree = PARSER.with_borrow_mut(|parser| {
        if parser.is_none() {
            let mut made = Parser::new();
            made.set_language(&tree_sitter_bash::LANGUAGE.into()).ok()?;
            *parser = Some(made);
        }
        parser.as_mut()?.parse(&document, None)
    });
    let Some(tree) = tree else {
        return commands;
    };
    let mut vars = HashMap::new();
    let mut reader = Reader {
        source: document.as_bytes(),
        vars: &mut vars,
        commands: &mut commands,
    };
    reader.walk(tree.root_node(), false);
    commands
}

struct Reader<'a> {
    source: &'a [u8],
    vars: &'a mut HashMap<String, String>,
    commands: &'a mut Vec<Command<'static>>,
}

impl Reader<'_> {
    fn text(&self, node: Node) -> &str {
        node.utf8_text(self.source).unwrap_or("")
    }

    /// Reads `node` and what it holds; `piped` says the command `node` is
    /// (or starts) reads a pipe.
    fn walk(&mut self, node: Node, piped: bool) {
        match node.kind() {
            "command" => self.command(node, piped),
            "pipeline" => {
                let mut cursor = node.walk();
                let mut after_pipe = piped;
                for child in node.named_children(&mut cursor) {
                    self.walk(child, after_pipe);
                    after_pipe = true;
                }
            }
            "variable_assignment" => {
                if let Some((name, value)) = self.assignment(node) {
                    self.commands.push(Command {
                        env: vec![(name, value)],
                        ..Command::default()
                    });
                }
            }
            _ => {
                let mut cursor = node.walk();
                let children: Vec<Node> = node.children(&mut cursor).collect();
                for child in children {
                    // A subshell or a group fed by a pipe: its first
                    // command reads that pipe.
                    self.walk(
                        child,
                        piped && matches!(node.kind(), "subshell" | "compound_statement"),
                    );
                }
            }
        }
    }

    /// `name=value`, recorded for the text's later `$name`.
    fn assignment(&mut self, node: Node) -> Option<(String, String)> {
        let name = self.text(node.child_by_field_name("name")?).to_string();
        let value = node
            .child_by_field_name("value")
            .map(|v| unquote(&self.substitute(self.text(v))))
            .unwrap_or_default();
        self.vars.insert(name.clone(), value.clone());
        Some((name, value))
    }

    fn command(&mut self, node: Node, piped: bool) {
        let mut command = Command {
            piped,
            ..Command::default()
        };
        let mut subshell = false;
        let mut found = Substitutions::default();
        // Arguments read so far: a substitution counts in the first few,
        // where an interpreter takes its program (`bash <(…)`,
        // `sh -c "$(…)"`), not in prose the parser took for arguments.
        let mut arguments = 0;
        let mut cursor = node.walk();
        let children: Vec<Node> = node.named_children(&mut cursor).collect();
        for child in children {
            match child.kind() {
                "variable_assignment" => {
                    if let Some(pair) = self.assignment(child) {
                        command.env.push(pair);
                    }
                }
                "file_redirect" | "herestring_redirect" | "heredoc_redirect" => {
                    command.substituted |=
                        holds_substitution(child) || child.kind() == "herestring_redirect";
                    self.nested(child);
                }
                _ => {
                    arguments += 1;
                    if arguments <= 4 {
                        substitutions(child, false, &mut found);
                    }
                    // PowerShell's `iex (irm …)` reads as a subshell.
                    subshell |= child.kind() == "subshell";
                    let text = self.text(child).to_string();
                    // A word with a quoted part is one word (`alias.p='push +main'`).
                    let quoted = matches!(child.kind(), "string" | "raw_string")
                        || text.contains(['\'', '"']);
                    command.words.extend(self.words(&text, quoted));
                    self.nested(child);
                }
            }
        }
        let name = command.words.first().map_or("", |w| w.as_ref());
        // Bare backticks run through `eval` and PowerShell's `iex`; to
        // `bash`, `` bash `~/.bashrc` `` is a Markdown code span more
        // often than an attack.
        command.substituted |= found.strong && !matches!(name, "." | "source")
            || found.strong && matches!(name, "." | "source") && !found.bare_backticks
            || found.bare_backticks && matches!(name, "eval" | "iex" | "invoke-expression")
            || subshell && runs_its_argument(name);
        // `export NAME=value` and `declare`, `local`, `readonly` are a
        // `declaration_command`, read by `walk`; `env`, `sudo` and the
        // like keep theirs as words, which the classes read.
        self.commands.push(command);
    }

    /// The commands inside substitutions of `node`.
    fn nested(&mut self, node: Node) {
        if matches!(
            node.kind(),
            "command_substitution" | "process_substitution" | "subshell"
        ) {
            self.walk(node, false);
            return;
        }
        let mut cursor = node.walk();
        let children: Vec<Node> = node.children(&mut cursor).collect();
        for child in children {
            if matches!(
                child.kind(),
                "command_substitution" | "process_substitution" | "subshell"
            ) {
                self.walk(child, false);
            } else {
                self.nested(child);
            }
        }
    }

    /// The words one argument becomes.
    fn words(&self, text: &str, quoted: bool) -> Vec<Word<'static>> {
        let expanded = self.substitute(text);
        if quoted {
            return vec![Cow::Owned(unquote(&expanded))];
        }
        let mut out = Vec::new();
        for word in unquote(&expanded).split_whitespace() {
            out.extend(braces(word).into_iter().map(Cow::Owned));
        }
        out
    }

    /// `text` with `$name` and `${name}` of known variables replaced.
    fn substitute(&self, text: &str) -> String {
        substitute(text, self.vars)
    }
}

/// The substitutions `node` holds.
#[derive(Default, Clone, Copy)]
struct Substitutions {
    /// `<(…)`, `$(…)`, or backticks inside a double-quoted string.
    strong: bool,
    /// A bare backtick span: a substitution to a shell, a code span to
    /// Markdown (`` bash `~/.bashrc` ``).
    bare_backticks: bool,
}

fn substitutions(node: Node, quoted: bool, out: &mut Substitutions) {
    match node.kind() {
        "process_substitution" => out.strong = true,
        "command_substitution" => {
            let backticks = node.child(0).is_some_and(|c| c.kind() == "`");
            if backticks && !quoted {
                out.bare_backticks = true;
            } else {
                out.strong = true;
            }
        }
        kind => {
            let quoted = quoted || kind == "string";
            let mut cursor = node.walk();
            let children: Vec<Node> = node.children(&mut cursor).collect();
            for child in children {
                substitutions(child, quoted, out);
            }
        }
    }
}

/// Whether `node` holds a substitution other than a bare backtick span.
fn holds_substitution(node: Node) -> bool {
    let mut found = Substitutions::default();
    substitutions(node, false, &mut found);
    found.strong
}

/// `text` with quotes and backslashes removed, as a shell reads a word.
fn unquote(text: &str) -> String {
    text.chars()
        .filter(|c| !matches!(c, '\'' | '"' | '\\'))
        .collect()
}

/// `text` with `$name` / `${name}` replaced by what a shell would put there:
/// the value `vars` knows, `${name:-default}`'s default, or nothing for a
/// name this text never set (`r${u}m` is `rm`); `$'\x72m'` decoded; a
/// one-character glob class `[r]` is that character.
fn substitute(text: &str, vars: &HashMap<String, String>) -> String {
    if !text.contains(['$', '[']) {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(['$', '[']) {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        if rest[at..].starts_with('[') {
            // `[r]`: one character, as a glob matches it.
            let mut chars = after.chars();
            if let (Some(c), Some(']')) = (chars.next(), chars.next()) {
                out.push(c);
                rest = &after[c.len_utf8() + 1..];
            } else {
                out.push('[');
                rest = after;
            }
            continue;
        }
        if let Some(quoted) = after.strip_prefix('\'') {
            let end = quoted.find('\'').unwrap_or(quoted.len());
            out.push_str(&ansi_c(&quoted[..end]));
            rest = quoted.get(end + 1..).unwrap_or("");
            continue;
        }
        let (name, default, len) = if let Some(braced) = after.strip_prefix('{') {
            match braced.find('}') {
                Some(end) => {
                    let inner = &braced[..end];
                    let (name, default) = match inner.find([':', '-', '=', '+']) {
                        Some(op) => {
                            let default = inner[op..].trim_start_matches([':', '-', '=', '+']);
                            (&inner[..op], Some(default))
                        }
                        None => (inner, None),
                    };
                    (name, default, end + 2)
                }
                None => ("", None, 0),
            }
        } else {
            let end = after
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(after.len());
            (&after[..end], None, end)
        };
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            out.push('$');
            rest = after;
            continue;
        }
        match (vars.get(name), default) {
            (Some(value), _) => out.push_str(value),
            (None, Some(default)) => out.push_str(default),
            // An unset name is empty; a well-known one (`$HOME`) is left
            // as written, a path a command may take.
            (None, None) if is_environment(name) => out.push_str(&rest[at..at + 1 + len]),
            (None, None) => {}
        }
        rest = &after[len..];
    }
    out.push_str(rest);
    out
}

/// Names a shell's environment sets: kept as written, not taken as empty.
fn is_environment(name: &str) -> bool {
    name.chars().all(|c| c.is_ascii_uppercase() || c == '_')
        || matches!(
            name,
            "home" | "path" | "user" | "pwd" | "shell" | "ifs" | "tmpdir"
        )
}

/// The text of an ANSI-C quoted string (`$'\x72m'`, `$'\162\155'`).
pub(super) fn ansi_c(text: &str) -> String {
    let mut out = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('x') => {
                let hex: String = std::iter::from_fn(|| chars.next_if(char::is_ascii_hexdigit))
                    .take(2)
                    .collect();
                if let Some(c) = u32::from_str_radix(&hex, 16).ok().and_then(char::from_u32) {
                    out.push(c);
                }
            }
            Some(d @ '0'..='7') => {
                let mut octal = String::from(d);
                while octal.len() < 3 {
                    match chars.next_if(|c| ('0'..='7').contains(c)) {
                        Some(c) => octal.push(c),
                        None => break,
                    }
                }
                if let Some(c) = u32::from_str_radix(&octal, 8).ok().and_then(char::from_u32) {
                    out.push(c);
                }
            }
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some(other) => out.push(other),
            None => {}
        }
    }
    out
}

/// Brace expansion of one word: `{rm,-rf,/srv}` is `rm -rf /srv`,
/// `/bin/{rm,ls}` is `/bin/rm /bin/ls`; a word without a `{a,b}` is itself.
fn braces(word: &str) -> Vec<String> {
    let Some(open) = word.find('{') else {
        return vec![word.to_string()];
    };
    let Some(close) = word[open..].find('}').map(|c| open + c) else {
        return vec![word.to_string()];
    };
    let inner = &word[open + 1..close];
    if !inner.contains(',') {
        return vec![word.to_string()];
    }
    let (head, tail) = (&word[..open], &word[close + 1..]);
    let mut out = Vec::new();
    for part in inner.split(',') {
        for rest in braces(tail) {
            out.push(format!("{head}{part}{rest}"));
            if out.len() >= MAX_EXPANSION {
                return out;
            }
        }
    }
    out
}

/// The words reading of `words` (the shell words of a normalised text):
/// commands cut at the shell's operators, with variables and braces
/// expanded. Only the commands with a word `wanted` says may start one
/// are kept (an assignment always is, for the variables it sets).
pub(super) fn worded<'a>(words: &'a str, wanted: impl Fn(&str) -> bool) -> Vec<Command<'a>> {
    let mut commands = Vec::new();
    let mut vars: HashMap<String, String> = HashMap::new();
    // The command being read, as slices of `words` until it is wanted.
    let mut segment: Vec<&'a str> = Vec::new();
    let mut env: Vec<(String, String)> = Vec::new();
    let (mut piped, mut substituted) = (false, false);
    let mut previous = "";
    let mut finish = |segment: &mut Vec<&'a str>,
                      env: &mut Vec<(String, String)>,
                      piped: &mut bool,
                      substituted: &mut bool,
                      vars: &HashMap<String, String>| {
        other_shells_assignments(segment, env);
        let keep = !env.is_empty()
            || segment
                .iter()
                .any(|w| wanted(w) || w.contains('$') || w.contains('{'));
        if keep {
            // From the first word that may start a command, as the
            // classes read a words-reading command from any word; only
            // the segment's first word reads the pipe.
            let first = segment
                .iter()
                .position(|w| wanted(w) || w.contains('$') || w.contains('{'))
                .unwrap_or(0);
            let mut command = Command {
                env: std::mem::take(env),
                piped: *piped && first == 0,
                substituted: *substituted,
                ..Command::default()
            };
            for word in segment.iter().skip(first).take(MAX_WORDS) {
                if !word.contains(['$', '{', '[']) {
                    command.words.push(Cow::Borrowed(*word));
                    continue;
                }
                let expanded = substitute(word, vars);
                for part in expanded.split_whitespace() {
                    command
                        .words
                        .extend(braces(part).into_iter().map(Cow::Owned));
                }
            }
            commands.push(command);
        }
        segment.clear();
        env.clear();
        *piped = false;
        *substituted = false;
    };
    for word in words.split(' ').filter(|w| !w.is_empty()) {
        match word {
            "|" => {
                finish(&mut segment, &mut env, &mut piped, &mut substituted, &vars);
                piped = true;
            }
            // `sh -c "`curl …`"`, `eval `curl …``: a backtick after `-c`
            // or `eval` opens a substitution the command runs.
            "`" if matches!(previous, "-c" | "-command" | "eval" | "iex") => {
                substituted = true;
                finish(&mut segment, &mut env, &mut piped, &mut substituted, &vars);
            }
            // `|&` pipes standard error too: still a pipe.
            "&" if previous == "|" => {}
            // A backtick opens or closes a substitution, or a Markdown code
            // span or fence: the parsed reading tells them apart.
            ";" | "&" | ")" | "`" | "{" | "}" => {
                finish(&mut segment, &mut env, &mut piped, &mut substituted, &vars);
            }
            "(" => {
                // `$(` and `<(` start a substitution: what holds it reads
                // its output; so does PowerShell's `iex (…)`.
                if matches!(previous, "$" | "<") || runs_its_argument(previous) {
                    substituted = true;
                }
                finish(&mut segment, &mut env, &mut piped, &mut substituted, &vars);
            }
            "<" | ">" | "$" => {}
            // Keywords in front of a command are not its program.
            "if" | "then" | "else" | "elif" | "do" | "while" | "until" | "!" | "time"
                if segment.is_empty() => {}
            _ if segment.is_empty() && is_assignment(word) => {
                let (name, value) = word.split_once('=').unwrap_or((word, ""));
                let value = substitute(value, &vars);
                vars.insert(name.to_string(), value.clone());
                env.push((name.to_string(), value));
            }
            _ => {
                // `then x=rm; $x -rf /` after prose: the variable holds
                // wherever it was set.
                if let Some((name, value)) = word.split_once('=').filter(|_| is_assignment(word)) {
                    let value = substitute(value, &vars);
                    vars.insert(name.to_string(), value);
                }
                segment.push(word);
            }
        }
        previous = word;
    }
    finish(&mut segment, &mut env, &mut piped, &mut substituted, &vars);
    commands
}

/// Assignments other shells write (into `env`): `export`, `declare -x`,
/// `typeset`, `local`, `readonly` and cmd's `set NAME=value`; csh's
/// `setenv NAME value`; Windows' `setx NAME value`; PowerShell's
/// `$env:NAME = value`.
fn other_shells_assignments(segment: &[&str], env: &mut Vec<(String, String)>) {
    // From any word on, as prose may lead into the command.
    for (at, word) in segment.iter().enumerate() {
        match *word {
            "export" | "declare" | "typeset" | "local" | "readonly" | "set" => {
                for word in &segment[at + 1..] {
                    if let Some((name, value)) =
                        word.split_once('=').filter(|_| is_assignment(word))
                    {
                        env.push((name.to_string(), value.to_string()));
                    }
                }
            }
            "setenv" | "setx" if segment.len() >= at + 3 => {
                env.push((segment[at + 1].to_string(), segment[at + 2].to_string()));
            }
            _ => {}
        }
    }
    for (at, word) in segment.iter().enumerate() {
        let Some(rest) = word.strip_prefix("$env:") else {
            continue;
        };
        let (name, value) = match rest.split_once('=') {
            Some((name, value)) if !value.is_empty() => (name, value),
            Some((name, _)) => (name, segment.get(at + 1).copied().unwrap_or("")),
            None if segment.get(at + 1) == Some(&"=") => {
                (rest, segment.get(at + 2).copied().unwrap_or(""))
            }
            None => continue,
        };
        env.push((name.to_string(), value.to_string()));
    }
}

/// PowerShell's commands that run the text they are given.
fn runs_its_argument(word: &str) -> bool {
    matches!(word, "iex" | "invoke-expression")
}

/// `NAME=value` with a shell variable name.
pub(super) fn is_assignment(word: &str) -> bool {
    word.split_once('=').is_some_and(|(name, _)| {
        !name.is_empty()
            && !name.starts_with(|c: char| c.is_ascii_digit())
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    })
}

#[cfg(test)]
mod tests {
    use super::{braces, parsed, worded};

    fn all(text: &str) -> Vec<Vec<String>> {
        parsed(text, |_| true)
            .into_iter()
            .map(|c| {
                c.words
                    .into_iter()
                    .map(std::borrow::Cow::into_owned)
                    .collect()
            })
            .collect()
    }

    #[test]
    fn expands_braces() {
        assert_eq!(braces("{rm,-rf,/srv}"), ["rm", "-rf", "/srv"]);
        assert_eq!(braces("/bin/{rm,ls}"), ["/bin/rm", "/bin/ls"]);
        assert_eq!(braces("{a}"), ["{a}"]);
        assert_eq!(braces("{a,b}{c,d}"), ["ac", "ad", "bc", "bd"]);
    }

    #[test]
    fn the_parser_resolves_variables_and_substitutions() {
        assert!(all("x=rm; $x -rf /").contains(&vec!["rm".into(), "-rf".into(), "/".into()]));
        let commands = parsed("curl x |& sh", |_| true);
        assert!(commands.iter().any(|c| c.words == ["sh"] && c.piped));
        let commands = parsed("bash <(curl x)", |_| true);
        assert!(
            commands
                .iter()
                .any(|c| c.words[0] == "bash" && c.substituted)
        );
        assert!(commands.iter().any(|c| c.words[0] == "curl"));
        let commands = parsed("export aea_skip_hooks=1", |_| true);
        assert!(
            commands
                .iter()
                .any(|c| c.env.iter().any(|(n, _)| n == "aea_skip_hooks"))
        );
        let commands = parsed("(curl x) | sh", |_| true);
        assert!(commands.iter().any(|c| c.words == ["sh"] && c.piped));
    }

    fn words(text: &str) -> Vec<super::Command<'static>> {
        let mut split = String::new();
        crate::normalize::push_shell_words(&mut split, text);
        worded(&split, |_| true)
            .into_iter()
            .map(|c| super::Command {
                words: c.words.into_iter().map(|w| w.into_owned().into()).collect(),
                env: c.env,
                piped: c.piped,
                substituted: c.substituted,
            })
            .collect()
    }

    #[test]
    fn the_words_reading_cuts_at_operators() {
        let commands = words("please run: curl x|sh; then x=rm && $x -rf /");
        assert!(commands.iter().any(|c| c.words == ["sh"] && c.piped));
        assert!(commands.iter().any(|c| c.words == ["rm", "-rf", "/"]));
        let commands = words("{rm,-rf,/srv}");
        assert_eq!(commands[0].words, ["rm", "-rf", "/srv"]);
    }
}
