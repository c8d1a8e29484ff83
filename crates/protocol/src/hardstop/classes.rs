//! What a command does, by meaning: the classes of dangerous commands a
//! hard stop names, each recognised however it is spelled — options in any
//! order, clustered or split, long options abbreviated as GNU tools and git
//! accept them, behind `sudo`, `env`, `xargs` or `busybox`, in POSIX shells,
//! PowerShell and cmd.

use super::shell::{Command, Word, is_assignment, worded};
use crate::normalize::push_shell_words;

/// A kind of dangerous command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Class {
    /// `rm -rf`, `Remove-Item -Recurse -Force`, `rd /s /q`, `find -exec rm -rf`.
    RecursiveDelete,
    /// `git push --force` and its kin, `filter-branch`, `reflog expire`.
    ForcePush,
    /// `--no-verify`, `commit -n`, `core.hooksPath`, `AEA_SKIP_HOOKS`,
    /// `HUSKY=0`.
    SkipHooks,
    /// A pipe, substitution or redirect into an interpreter.
    PipeToInterpreter,
    /// `sudo`, `doas`, `run0`, `pkexec`, `su -`, `-Verb RunAs`.
    Privilege,
    /// `chmod` making a file writable by everyone, setuid or setgid.
    WorldWritable,
    /// `DROP TABLE`.
    DropTable,
    /// `DROP DATABASE`, `DROP SCHEMA`.
    DropDatabase,
    /// `TRUNCATE`, `DELETE FROM t` without `WHERE`.
    Truncate,
}

/// The classes found, one bit each.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Found(u16);

impl Found {
    pub fn add(&mut self, class: Class) {
        self.0 |= 1 << class as u16;
    }

    pub fn has(self, class: Class) -> bool {
        self.0 & (1 << class as u16) != 0
    }

    #[cfg(test)]
    pub fn any(self) -> bool {
        self.0 != 0
    }
}

/// Words that make a line worth reading for the classes: the programs
/// they are about (a prefix will do: `python` for `python3`), the SQL
/// keywords and the switches that turn hooks off.
pub(super) const TRIGGERS: &[&str] = &[
    "rm",
    "unlink",
    "rd",
    "rmdir",
    "del",
    "erase",
    "ri",
    "remove-item",
    "find",
    "git",
    "chmod",
    "icacls",
    "sudo",
    "doas",
    "pkexec",
    "run0",
    "runas",
    "su",
    "start-process",
    "saps",
    "busybox",
    "toybox",
    "env",
    "export",
    "xargs",
    "sh",
    "bash",
    "zsh",
    "dash",
    "ksh",
    "ash",
    "fish",
    "csh",
    "perl",
    "ruby",
    "node",
    "deno",
    "bun",
    "php",
    "lua",
    "tclsh",
    "osascript",
    "pwsh",
    "powershell",
    "iex",
    "invoke-expression",
    "cmd",
    "eval",
    "source",
    "python",
    "pypy",
    "drop",
    "truncate",
    "delete",
    "skip_hooks",
    "husky",
    "git_config",
    "scriptblock",
    "setenv",
    "setx",
    "skip",
    "lefthook",
    "overcommit_disable",
    "dzdo",
    "pbrun",
    "pfexec",
    "ksu",
    "psexec",
    "systemd-run",
    "install",
    "mkdir",
    "umask",
    "setfacl",
    "awk",
    "uninstall",
    "hookspath",
    "dropdb",
    "mysqladmin",
    "invokescript",
    "rscript",
    "jshell",
    "cacls",
    "gsudo",
    "sudo-rs",
    "sudoedit",
    ". <",
    ".\t",
];

/// Whether a normalised line names a program a class is about, a variable
/// or a brace expansion: the lines worth parsing.
pub(super) fn may_hold_a_command(line: &str) -> bool {
    line.split(|c: char| {
        c.is_whitespace() || matches!(c, '|' | ';' | '&' | '(' | ')' | '`' | '<' | '>')
    })
    .any(|word| {
        let word = word.trim_matches(|c| matches!(c, '\'' | '"' | '\\' | '{' | '}'));
        word.contains('$') || word.contains(',') && word.contains('{') || may_start_a_command(word)
    })
}

/// Whether `word` names a program a class is about.
pub(super) fn may_start_a_command(word: &str) -> bool {
    let name = program(word);
    is_interpreter(name)
        || name.contains("scriptblock]::create")
        || name.contains("invokescript")
        || matches!(
            name,
            "rm" | "unlink"
                | "rd"
                | "rmdir"
                | "del"
                | "erase"
                | "ri"
                | "remove-item"
                | "find"
                | "git"
                | "chmod"
                | "icacls"
                | "sudo"
                | "sudoedit"
                | "doas"
                | "pkexec"
                | "run0"
                | "runas"
                | "gsudo"
                | "su"
                | "start-process"
                | "saps"
                | "busybox"
                | "toybox"
                | "dzdo"
                | "pbrun"
                | "pfexec"
                | "ksu"
                | "psexec"
                | "systemd-run"
                | "install"
                | "mkdir"
                | "umask"
                | "setfacl"
                | "sudo-rs"
                | "aea"
                | "dropdb"
                | "mysqladmin"
                | "cacls"
                | "env"
                | "export"
                | "xargs"
        )
}

/// The program name of a word: `/usr/bin/rm`, `\rm` and `rm.exe` are `rm`.
fn program(word: &str) -> &str {
    // PowerShell's module-qualified names, once the shell words reading
    // dropped the backslash: `Microsoft.PowerShell.Management\Remove-Item`.
    if let Some(name) = word.strip_prefix("microsoft.powershell.") {
        for module in [
            "management",
            "utility",
            "core",
            "security",
            "host",
            "diagnostics",
        ] {
            if let Some(command) = name.strip_prefix(module) {
                return command.trim_start_matches('\\');
            }
        }
    }
    let base = word.rsplit(['/', '\\']).next().unwrap_or(word);
    let base = if base.is_empty() {
        word.trim_start_matches('\\')
    } else {
        base
    };
    base.strip_suffix(".exe").unwrap_or(base)
}

/// Whether `arg` is the long option `--name` (or `--name=value`) for one of
/// `names`, spelled in full or abbreviated to at least `min` letters, as
/// GNU getopt and git's option parser accept unambiguous prefixes.
fn long_option(arg: &str, names: &[&str], min: usize) -> bool {
    let Some(long) = arg.strip_prefix("--") else {
        return false;
    };
    let long = long.split('=').next().unwrap_or(long);
    long.len() >= min && names.iter().any(|n| n.starts_with(long))
}

/// The short options of a cluster (`-rf`), if `arg` is one.
fn short_options(arg: &str) -> Option<&str> {
    arg.strip_prefix('-')
        .filter(|s| !s.is_empty() && !s.starts_with('-'))
}

/// A PowerShell parameter (`-Recurse`, `-rec`) abbreviating `name` to at
/// least `min` letters.
fn ps_parameter(arg: &str, name: &str, min: usize) -> bool {
    arg.strip_prefix('-')
        .map(|p| p.split(':').next().unwrap_or(p))
        .is_some_and(|p| p.len() >= min && name.starts_with(p))
}

/// Programs that run the program named after their own options.
fn wrapper_options(program: &str) -> Option<&'static [&'static str]> {
    // The options that take a separate value, so that value is not taken
    // for the program.
    Some(match program {
        "sudo" => &[
            "-u", "-g", "-h", "-p", "-c", "-d", "-r", "-t", "-D", "-R", "-T", "-C", "-U",
        ],
        "doas" => &["-u", "-c"],
        "run0" => &[
            "-u",
            "--user",
            "--property",
            "--description",
            "--slice",
            "-d",
        ],
        "pkexec" => &["--user"],
        "env" => &["-u", "-c", "--unset", "--chdir", "-s", "--split-string"],
        "nice" => &["-n", "--adjustment"],
        "ionice" => &["-c", "-n", "-p", "-t"],
        "time" => &["-f", "-o", "--format", "--output"],
        "timeout" => &["-s", "-k", "--signal", "--kill-after"],
        "stdbuf" => &["-i", "-o", "-e"],
        "xargs" => &[
            "-i", "-n", "-p", "-d", "-e", "-l", "-s", "-a", "-I", "-P", "-E", "-L",
        ],
        "command" | "exec" | "nohup" | "setsid" | "builtin" | "then" | "do" | "else" | "!" => {
            &["-a"]
        }
        "busybox" | "toybox" | "chrt" | "taskset" | "watch" | "unbuffer" => &["-n"],
        _ => return None,
    })
}

/// A command, and the assignments a wrapper made for it.
type Level<'w> = (&'w [Word<'w>], Vec<(&'w str, &'w str)>);

/// The levels of `words`: the command itself, then each program a wrapper
/// runs, each with the assignments made for it (`env A=1 git …`).
fn levels<'w>(words: &'w [Word<'w>]) -> Vec<Level<'w>> {
    let mut out = Vec::new();
    let mut at = 0;
    let mut env: Vec<(&str, &str)> = Vec::new();
    while at < words.len() && out.len() < 8 {
        let level = &words[at..];
        out.push((level, env.clone()));
        let name = program(&level[0]);
        let Some(takes_value) = wrapper_options(name) else {
            break;
        };
        let mut next = at + 1;
        // `timeout DURATION cmd`, `chrt PRIO cmd`, `taskset MASK cmd`.
        let mut operands_first = usize::from(matches!(name, "timeout" | "chrt" | "taskset"));
        while let Some(word) = words.get(next) {
            if word == "--" {
                next += 1;
                break;
            }
            if word.starts_with('-') && word.len() > 1 {
                next += 1 + usize::from(takes_value.contains(&&**word));
            } else if is_assignment(word) {
                let (n, v) = word.split_once('=').unwrap_or((word, ""));
                env.push((n, v));
                next += 1;
            } else if operands_first > 0 {
                operands_first -= 1;
                next += 1;
            } else {
                break;
            }
        }
        at = next;
    }
    out
}

/// Every class `command` belongs to, into `found`. `anywhere`: the command
/// comes from the words reading, where a command may start at any word
/// (`please run rm -rf /`).
pub(super) fn classify(command: &Command<'_>, anywhere: bool, found: &mut Found) {
    for (name, value) in &command.env {
        assignment(name, value, found);
    }
    if anywhere {
        // `then set AEA_SKIP_HOOKS=1 and commit`: the switch, wherever it
        // stands in prose.
        for word in command.words.iter().filter(|w| is_assignment(w)) {
            let (name, value) = word.split_once('=').unwrap_or((word, ""));
            assignment(name, value, found);
        }
    }
    let starts = if anywhere { command.words.len() } else { 1 };
    for start in 0..starts.min(command.words.len()) {
        // In the words reading, a command starts at a program a class is
        // about (`please run rm -rf /`).
        if start > 0 && !may_start_a_command(&command.words[start]) {
            continue;
        }
        let words = &command.words[start..];
        let piped = command.piped && start == 0;
        for (level, env) in levels(words) {
            for (name, value) in env {
                assignment(name, value, found);
            }
            one(level, piped, command.substituted, found);
        }
    }
    if !anywhere {
        // `sh -c "rm -rf /"`, `eval "…"`, `su -c '…'`, `ssh host 'rm -rf /'`:
        // a quoted argument may itself be a command line.
        for word in command.words.iter().skip(1).filter(|w| w.contains(' ')) {
            let mut split = String::new();
            push_shell_words(&mut split, word);
            for inner in worded(&split, may_start_a_command) {
                classify(&inner, true, found);
            }
        }
    }
}

/// An assignment in front of a command or exported: the switches that turn
/// hooks and gates off.
fn assignment(name: &str, value: &str, found: &mut Found) {
    let value = value.trim();
    let skips = match name {
        // aea's own gate, husky's, pre-commit's (`SKIP=flake8`),
        // simple-git-hooks', overcommit's.
        "aea_skip_hooks"
        | "husky_skip_hooks"
        | "skip_hooks"
        | "git_hooks_skip"
        | "skip_simple_git_hooks"
        | "overcommit_disable"
        | "skip" => !value.is_empty(),
        "husky" | "lefthook" => value == "0" || value == "false",
        "git_config_parameters" => value.contains("core.hookspath"),
        _ => name.starts_with("git_config_key_") && value.contains("core.hookspath"),
    };
    if skips {
        found.add(Class::SkipHooks);
    }
}

/// The classes of one simple command `words` (its program first).
fn one(words: &[Word<'_>], piped: bool, substituted: bool, found: &mut Found) {
    let Some(first) = words.first() else {
        return;
    };
    let name = program(first);
    let args = &words[1..];
    if name == "git" {
        git(args, found);
    }
    if name == "find" {
        find_exec(args, found);
    }
    let class = match name {
        "rm" | "unlink" if rm_recursive_force(args) => Some(Class::RecursiveDelete),
        // `yes | rm -r`: the pipe answers every question.
        "rm" if piped
            && args.iter().any(|a| {
                short_options(a).is_some_and(|s| s.contains(['r', 'R'])) || a == "--recursive"
            }) =>
        {
            Some(Class::RecursiveDelete)
        }
        // What removes the hooks or aea's gate skips them too.
        _ if matches!(name, "rm" | "mv" | "unlink" | "chmod" | "truncate" | "ln")
            && args.iter().any(|a| a.contains(".git/hooks")) =>
        {
            Some(Class::SkipHooks)
        }
        "aea"
            if args.first().is_some_and(|a| a == "uninstall")
                || args
                    .windows(2)
                    .any(|w| w[0] == "hooks" && w[1] == "uninstall") =>
        {
            Some(Class::SkipHooks)
        }
        // `hooksPath = /dev/null` written into a git config file.
        _ if args
            .iter()
            .any(|a| a == "hookspath" || a.starts_with("hookspath=")) =>
        {
            Some(Class::SkipHooks)
        }
        "dropdb" => Some(Class::DropDatabase),
        "mysqladmin" if args.iter().any(|a| a == "drop") => Some(Class::DropDatabase),
        // PowerShell runs what these are given.
        "iex" | "invoke-expression" if !args.is_empty() => Some(Class::PipeToInterpreter),
        "pwsh" | "powershell"
            if args.iter().any(|a| {
                a.len() >= 4 && "-encodedcommand".starts_with(a.as_ref()) || a == "-ec"
            }) =>
        {
            Some(Class::PipeToInterpreter)
        }
        _ if name.contains("invokescript") => Some(Class::PipeToInterpreter),
        "remove-item" | "ri" | "del" | "erase" | "rd" | "rmdir"
            if powershell_or_cmd_delete(name, args) =>
        {
            Some(Class::RecursiveDelete)
        }
        "chmod" if chmod_world_or_setuid(args) => Some(Class::WorldWritable),
        // `install -m 4755`, `mkdir -m 777`: a mode given at creation.
        "install" | "mkdir" | "mkfifo" | "mknod"
            if args.windows(2).any(|w| {
                (w[0] == "-m" || w[0] == "--mode")
                    && (octal_mode_is_dangerous(&w[1]) || symbolic_mode_is_dangerous(&w[1]))
            }) || args.iter().any(|a| {
                a.strip_prefix("--mode=")
                    .is_some_and(|m| octal_mode_is_dangerous(m) || symbolic_mode_is_dangerous(m))
            }) =>
        {
            Some(Class::WorldWritable)
        }
        // A umask that leaves others' write bit on for every new file.
        "umask"
            if args.first().is_some_and(|m| {
                m.len() >= 3
                    && m.bytes().all(|b| (b'0'..=b'7').contains(&b))
                    && u32::from_str_radix(m, 8).is_ok_and(|v| v & 0o002 == 0)
            }) =>
        {
            Some(Class::WorldWritable)
        }
        "setfacl"
            if args.iter().any(|a| {
                a.split(',').any(|entry| {
                    let acl = entry
                        .trim_start_matches("default:")
                        .trim_start_matches("d:");
                    (acl.starts_with("o:") || acl.starts_with("other:")) && acl.contains('w')
                })
            }) =>
        {
            Some(Class::WorldWritable)
        }
        "icacls" | "cacls"
            if args.iter().any(|a| a.starts_with("/grant") || a == "/g")
                && args.iter().any(|a| {
                    ["everyone:", "*s-1-1-0:", "users:", "authenticated users:"]
                        .iter()
                        .any(|who| a.starts_with(who))
                }) =>
        {
            Some(Class::WorldWritable)
        }
        "sudo" | "sudoedit" | "sudo-rs" | "doas" | "pkexec" | "run0" | "runas" | "gsudo"
        | "dzdo" | "pbrun" | "pfexec" | "ksu" | "psexec" | "psexec64" => Some(Class::Privilege),
        "systemd-run"
            if args
                .iter()
                .any(|a| a.starts_with("--uid") || a.starts_with("-puser=") || a == "-p") =>
        {
            Some(Class::Privilege)
        }
        "su" if args.is_empty()
            || args.iter().take(3).any(|a| {
                matches!(&**a, "-" | "--login" | "root")
                    || a.starts_with("--command")
                    || short_options(a).is_some_and(|s| s.contains(['l', 'c', 's']))
            }) =>
        {
            Some(Class::Privilege)
        }
        "start-process" | "saps" | "start"
            if args
                .windows(2)
                .any(|w| ps_parameter(&w[0], "verb", 1) && w[1] == "runas")
                || args.iter().any(|a| a.ends_with(":runas")) =>
        {
            Some(Class::Privilege)
        }
        // PowerShell's `[scriptblock]::Create(text)` makes code of text,
        // as `iex` does.
        _ if name.contains("scriptblock]::create") => Some(Class::PipeToInterpreter),
        // Any substitution handed to an interpreter — an argument, a file
        // it reads, its input — is run by it; so is a pipe into one that
        // reads its program from standard input.
        _ if is_interpreter(name)
            && (substituted || piped && reads_program_from_stdin(name, args)) =>
        {
            Some(Class::PipeToInterpreter)
        }
        _ => None,
    };
    if let Some(class) = class {
        found.add(class);
    }
}

/// `find … -exec rm -rf {} ;`: the command `find` runs.
fn find_exec(args: &[Word<'_>], found: &mut Found) {
    if let Some(at) = args
        .iter()
        .position(|a| matches!(&**a, "-exec" | "-execdir" | "-ok" | "-okdir"))
    {
        let inner: Vec<Word<'_>> = args[at + 1..]
            .iter()
            .take_while(|a| !matches!(a.as_ref(), ";" | "+"))
            .cloned()
            .collect();
        one(&inner, false, false, found);
    }
}

/// `rm` with a recursive and a force option, however spelled.
fn rm_recursive_force(args: &[Word<'_>]) -> bool {
    const LONG: &[&str] = &[
        "force",
        "interactive",
        "one-file-system",
        "no-preserve-root",
        "preserve-root",
        "recursive",
        "dir",
        "verbose",
        "help",
        "version",
    ];
    let (mut recursive, mut force) = (false, false);
    for arg in args {
        if arg == "--" {
            break;
        }
        if arg.starts_with("--") {
            // An abbreviation that names one option only.
            let matching: Vec<&&str> = LONG.iter().filter(|n| long_option(arg, &[n], 1)).collect();
            recursive |= matching == [&"recursive"];
            force |= matching == [&"force"];
            recursive |= arg == "--recursive";
            force |= arg == "--force" || arg == "--interactive=never";
        } else if let Some(short) = short_options(arg) {
            recursive |= short.contains(['r', 'R']);
            force |= short.contains('f');
        }
    }
    recursive && force
}

/// `Remove-Item -Recurse -Force` (and its aliases), `rd /s`, `del /s`.
fn powershell_or_cmd_delete(name: &str, args: &[Word<'_>]) -> bool {
    // cmd's switches, also run together: `/s/q`.
    let cmd_switch = |s: &str| {
        args.iter()
            .any(|a| a.starts_with('/') && a.split('/').any(|part| part == &s[1..]))
    };
    if matches!(name, "rd" | "rmdir") && cmd_switch("/s") {
        return true;
    }
    if matches!(name, "del" | "erase") && cmd_switch("/s") && (cmd_switch("/q") || cmd_switch("/f"))
    {
        return true;
    }
    let recurse = args.iter().any(|a| ps_parameter(a, "recurse", 1));
    let force = args.iter().any(|a| ps_parameter(a, "force", 2));
    recurse && (force || matches!(name, "rmdir" | "rd"))
        // PowerShell's `rm -r -fo` is Remove-Item; a Unix `rm` reads `-fo`
        // as `-f -o` too.
        || args.iter().filter_map(|a| short_options(a)).any(|s| s.contains('r'))
            && args.iter().filter_map(|a| short_options(a)).any(|s| s.contains('f'))
}

/// The git global options that take the next word as their value.
const GIT_VALUE_OPTIONS: &[&str] = &[
    "-c",
    "-C",
    "--git-dir",
    "--work-tree",
    "--namespace",
    "--config-env",
    "--exec-path",
    "--super-prefix",
    "--list-cmds",
];

fn git(args: &[Word<'_>], found: &mut Found) {
    let mut at = 0;
    // Global options before the subcommand; `-c name=value` and
    // `--config-env=name=…` can turn hooks off.
    while let Some(arg) = args.get(at) {
        if !arg.starts_with('-') {
            break;
        }
        let inline = arg.split_once('=').map(|(_, v)| v);
        let value = if GIT_VALUE_OPTIONS.contains(&&**arg) {
            at += 1;
            args.get(at).map(|a| &**a)
        } else {
            inline
        };
        if matches!(arg.split('=').next(), Some("-c" | "--config-env"))
            && value.is_some_and(|v| v.starts_with("core.hookspath"))
        {
            found.add(Class::SkipHooks);
        }
        // `-c remote.origin.push=+HEAD:main`: a forced refspec by config.
        if arg == "-c"
            && value.is_some_and(|v| {
                v.split_once('=').is_some_and(|(k, v)| {
                    k.to_ascii_lowercase().ends_with(".push") && v.starts_with('+')
                })
            })
        {
            found.add(Class::ForcePush);
        }
        at += 1;
    }
    // `git -c alias.x='!rm -rf /' x`, `git -c alias.ci='commit -n' ci`:
    // what an alias runs is read as a command, or as git's own arguments.
    for value in args[..at].iter().filter_map(|a| a.strip_prefix("alias.")) {
        alias(value.split_once('=').map_or("", |(_, v)| v), found);
    }
    let Some(sub) = args.get(at) else {
        return;
    };
    if sub == "config"
        && let Some(name) = args[at + 1..].iter().position(|a| a.starts_with("alias."))
    {
        let value: Vec<&str> = args[at + 2 + name..].iter().map(AsRef::as_ref).collect();
        alias(&value.join(" "), found);
    }
    let rest = &args[at + 1..];
    let no_verify = || rest.iter().any(|a| long_option(a, &["no-verify"], 4));
    if sub == "push" && push_forces(rest) {
        found.add(Class::ForcePush);
    }
    let class = match &**sub {
        "push" | "merge" | "am" | "cherry-pick" | "revert" | "rebase" | "pull" | "switch"
        | "checkout"
            if no_verify() =>
        {
            Some(Class::SkipHooks)
        }
        "commit" if no_verify() || commit_short_n(rest) => Some(Class::SkipHooks),
        "config" if rest.iter().any(|a| a.starts_with("core.hookspath")) => Some(Class::SkipHooks),
        "config"
            if rest
                .windows(2)
                .any(|w| w[0].ends_with(".push") && w[1].starts_with('+')) =>
        {
            Some(Class::ForcePush)
        }
        "filter-branch" | "filter-repo" => Some(Class::ForcePush),
        "reflog"
            if rest
                .first()
                .is_some_and(|a| matches!(&**a, "expire" | "delete")) =>
        {
            Some(Class::ForcePush)
        }
        "update-ref"
            if rest
                .iter()
                .any(|a| a == "-d" || long_option(a, &["delete"], 3)) =>
        {
            Some(Class::ForcePush)
        }
        _ => None,
    };
    if let Some(class) = class {
        found.add(class);
    }
}

/// What a git alias defined as `value` would do: `!cmd` runs a shell
/// command, anything else is git's own arguments.
fn alias(value: &str, found: &mut Found) {
    let mut split = String::new();
    if let Some(command) = value.strip_prefix('!') {
        push_shell_words(&mut split, command);
        for inner in worded(&split, may_start_a_command) {
            classify(&inner, true, found);
        }
    } else {
        push_shell_words(&mut split, value);
        let args: Vec<Word<'_>> = split.split_whitespace().map(Word::Borrowed).collect();
        git(&args, found);
    }
}

/// `git push` that overwrites or deletes what the remote holds.
fn push_forces(args: &[Word<'_>]) -> bool {
    args.iter().any(|arg| {
        if arg.starts_with("--") {
            long_option(
                arg,
                &[
                    "force",
                    "force-with-lease",
                    "force-if-includes",
                    "mirror",
                    "delete",
                    "prune",
                ],
                2,
            ) && !long_option(arg, &["follow-tags"], 2)
                || arg.starts_with("--force")
        } else if let Some(short) = short_options(arg) {
            short.contains(['f', 'd'])
        } else {
            // `+main` forces, `:main` deletes the remote branch.
            (arg.starts_with('+') || arg.starts_with(':')) && arg.len() > 1
        }
    })
}

/// `git commit -n`, `-an`, `-anm msg`: `-n` in a cluster before an option
/// that takes the rest of the cluster as its value.
fn commit_short_n(args: &[Word<'_>]) -> bool {
    let mut skip_value = false;
    for arg in args {
        if std::mem::take(&mut skip_value) {
            continue;
        }
        if arg == "--" {
            break;
        }
        let Some(short) = short_options(arg) else {
            continue;
        };
        for (i, c) in short.char_indices() {
            match c {
                'n' => return true,
                // These take a value: the rest of the cluster, or the next word.
                'm' | 'c' | 'C' | 'F' | 't' | 'u' | 'S' => {
                    skip_value = i + 1 == short.len();
                    break;
                }
                _ => {}
            }
        }
    }
    false
}

/// `chmod` giving others write permission, or setting setuid or setgid.
fn chmod_world_or_setuid(args: &[Word<'_>]) -> bool {
    args.iter()
        .any(|arg| octal_mode_is_dangerous(arg) || symbolic_mode_is_dangerous(arg))
}

fn octal_mode_is_dangerous(arg: &str) -> bool {
    let arg = arg.strip_prefix("0o").unwrap_or(arg);
    let arg = if arg.len() > 4 {
        arg.trim_start_matches('0')
    } else {
        arg
    };
    if arg.is_empty() || arg.len() > 4 || !arg.bytes().all(|b| (b'0'..=b'7').contains(&b)) {
        return false;
    }
    // Three digits are `ugo`; a fourth in front is setuid, setgid, sticky.
    let Ok(mode) = u32::from_str_radix(arg, 8) else {
        return false;
    };
    arg.len() >= 3 && (mode & 0o002 != 0 || mode & 0o6000 != 0)
}

/// `o+w`, `go+w`, `a=rwx`, `=rwx`, `u+s`, `+s`, in a comma-separated list.
fn symbolic_mode_is_dangerous(arg: &str) -> bool {
    arg.split(',').any(|clause| {
        let who_end = clause
            .find(|c: char| !matches!(c, 'u' | 'g' | 'o' | 'a'))
            .unwrap_or(clause.len());
        let (who, actions) = clause.split_at(who_end);
        if actions.is_empty() || !actions.starts_with(['+', '=', '-']) {
            return false;
        }
        if !actions.chars().all(|c| {
            matches!(
                c,
                '+' | '=' | '-' | 'r' | 'w' | 'x' | 'X' | 's' | 't' | 'u' | 'g' | 'o'
            )
        }) {
            return false;
        }
        // Each operator with the permissions after it.
        let mut dangerous = false;
        let mut op = ' ';
        let mut perms = String::new();
        let check = |op: char, perms: &str| {
            if op == '-' {
                return false;
            }
            let others = who.is_empty() && op == '=' || who.contains(['o', 'a']);
            // `o=u`, `o=g`: others get what the owner or group has.
            (others && perms.contains(['w', 'u', 'g'])) || perms.contains('s')
        };
        for c in actions.chars() {
            if matches!(c, '+' | '=' | '-') {
                if op != ' ' {
                    dangerous |= check(op, &perms);
                }
                op = c;
                perms.clear();
            } else {
                perms.push(c);
            }
        }
        dangerous | check(op, &perms)
    })
}

fn is_interpreter(name: &str) -> bool {
    matches!(
        name,
        "sh" | "bash"
            | "zsh"
            | "dash"
            | "ksh"
            | "mksh"
            | "ash"
            | "yash"
            | "posh"
            | "fish"
            | "csh"
            | "tcsh"
            | "perl"
            | "ruby"
            | "node"
            | "nodejs"
            | "deno"
            | "bun"
            | "php"
            | "lua"
            | "tclsh"
            | "osascript"
            | "pwsh"
            | "powershell"
            | "iex"
            | "invoke-expression"
            | "cmd"
            | "eval"
            | "source"
            | "."
    ) || matches!(
        name,
        "rbash" | "$shell" | "${shell}" | "awk" | "gawk" | "mawk" | "rscript" | "jshell"
    ) || [
        "python", "pypy", "ruby", "perl", "php", "lua", "node", "tclsh", "pwsh",
    ]
    .iter()
    .any(|base| {
        name.strip_prefix(base)
            .is_some_and(|v| !v.is_empty() && v.chars().all(|c| c.is_ascii_digit() || c == '.'))
    }) || name
        .strip_prefix("python")
        .or_else(|| name.strip_prefix("pypy"))
        .is_some_and(|v| v.chars().all(|c| c.is_ascii_digit() || c == '.'))
}

fn is_posix_shell(name: &str) -> bool {
    matches!(
        name,
        "sh" | "bash" | "rbash" | "zsh" | "dash" | "ksh" | "mksh" | "ash" | "yash" | "posh"
    )
}

/// `tools/gen.py`, `./x`, `run.sh`: a path, or a name with an extension.
fn looks_like_a_file(word: &str) -> bool {
    word.contains('/')
        || word.rsplit_once('.').is_some_and(|(stem, ext)| {
            !stem.is_empty()
                && (1..=4).contains(&ext.len())
                && ext.chars().all(|c| c.is_ascii_alphanumeric())
        })
}

/// Whether an interpreter at the end of a pipe runs what the pipe carries:
/// not when it is given a program (`-c`, `-e`, `-m`) or a script file.
fn reads_program_from_stdin(name: &str, args: &[Word<'_>]) -> bool {
    if matches!(name, "iex" | "invoke-expression" | "source" | "." | "eval") {
        return true;
    }
    for (at, arg) in args.iter().enumerate() {
        match arg.as_ref() {
            // Standard input by name or by flag.
            "-" | "-s" | "--" | "/dev/stdin" | "/dev/fd/0" | "/proc/self/fd/0" => return true,
            // These take the program as their value (for a POSIX shell,
            // only `-c`: its `-e`, `-x`, `-r` are flags); `pwsh -c -` reads
            // it from standard input, and `xargs sh -c` gets it from the pipe.
            "-c" | "-command" | "-file" | "--eval" | "--command" => {
                return args.get(at + 1).is_none_or(|a| a == "-");
            }
            "-e" | "-m" | "-r" | "-x" if !is_posix_shell(name) => {
                return args.get(at + 1).is_some_and(|a| a == "-");
            }
            a if a.starts_with('-') => {}
            // A script file operand (`tools/gen.py`, `x.sh`): the pipe is
            // its data. A first operand that is no file name is prose
            // after the command (`| sh and then tell me`).
            a => return !looks_like_a_file(a),
        }
    }
    true
}
