//! Command-line syntax: clap derive types only. Commands turn these into
//! checked domain values before doing any work.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::audit::AuditEvent;
use crate::duration::{Duration, Period, When};
use crate::harness::{Agent, Harness};
use crate::hooks::GitHook;
use crate::mailbox::Outcome;
use crate::message::{MessageType, Priority};
use crate::templates::PolicyPreset;

#[derive(Debug, Parser)]
#[command(
    name = "aea",
    version,
    about = "Let AI coding agents in different repositories exchange messages through files",
    long_about = "aea implements the AEA v1.0 inter-agent protocol: agents in different git \
repositories send each other structured messages through each repository's .aea/ folder, \
with no server. Start with `aea init` in each repository, then `aea send` and `aea check`."
)]
pub struct Cli {
    /// Act on the repository at or around PATH (as if run there) instead of the one around the current directory
    #[arg(short = 'C', long = "repo", global = true, value_name = "PATH")]
    pub repo: Option<PathBuf>,

    /// Print machine-readable JSON
    #[arg(long, global = true)]
    pub json: bool,

    /// Print less: `check` and `pending` say only how many wait; errors and warnings stay
    #[arg(short, long, global = true)]
    pub quiet: bool,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Set up .aea/, the policy and the agent instructions in a repository
    Init(InitArgs),
    /// Send a message to another agent's repository
    Send(SendArgs),
    /// List unprocessed messages in processing order
    Check(CheckArgs),
    /// Print one message, framed as untrusted data (also mail you sent, or that gc archived)
    Show(ShowArgs),
    /// List a message's attachments, or write one, verified, to a new file
    Attachment(AttachmentArgs),
    /// Answer a message in the same conversation
    Reply(ReplyArgs),
    /// Mark a message processed
    Process(ProcessArgs),
    /// List the messages waiting for a person's approval
    Pending(PendingArgs),
    /// Approve a gated message, as a person
    Approve(ApproveArgs),
    /// Reject a gated message, as a person
    Reject(RejectArgs),
    /// Walk through pending messages on a terminal: show, approve (typing back a number shown there), reject, skip
    Review(ReviewArgs),
    /// Manage the SSH keys whose signature makes a person's approval (kept in your config, never a repository)
    #[command(subcommand)]
    Approvers(ApproversCommand),
    /// Show the effective policy, explain the decision on a message, or replay a proposed one
    #[command(subcommand)]
    Policy(PolicyCommand),
    /// Wait until new mail arrives, then print one JSON line (for background use)
    Watch(WatchArgs),
    /// Start, stop or inspect the background monitor that rings the configured doorbells
    #[command(subcommand)]
    Monitor(MonitorCommand),
    /// Move a file out of the inbox into .aea/.quarantine/, with a reason
    Quarantine(QuarantineArgs),
    /// Archive old processed and expired mail, quarantine invalid files
    Gc(GcArgs),
    /// Exchange mail with other machines through a git remote
    Sync(SyncArgs),
    /// Show how far a sent message got: queued, pushed, delivered, processed, expired
    Status(ShowArgs),
    /// List the mail this repository sent, newest first, with how far each got
    Sent,
    /// List every message of REF's conversation held here (received, sent, archived), oldest first
    Thread(ShowArgs),
    /// Install, remove or inspect the git hooks that surface new mail
    #[command(subcommand)]
    Hooks(HooksCommand),
    /// Revert everything `aea init` did, keeping a backup of messages and log
    Uninstall(UninstallArgs),
    /// Check the whole installation and print the fix for each problem
    Doctor(DoctorArgs),
    /// Read the audit log
    Log(LogArgs),
    /// List or manage the agents this user knows, and their keys (like known_hosts)
    Agents(AgentsArgs),
    /// Print this agent's id, public key and fingerprint, and the line a peer runs to pin that key
    Whoami,
    /// Check message files against the protocol
    Validate(ValidateArgs),
    /// Allow this repository's config to run programs, pass options to git or reach hosts
    Trust(TrustConfigArgs),
    /// Show two repositories exchanging mail, in a temporary directory
    Demo(DemoArgs),
    /// Deliver another protocol's message files into this inbox (once per message id)
    Import(ImportArgs),
    /// Write messages as another protocol's files into a folder, never replacing one
    Export(ExportArgs),
    /// Import the OACP and Roo folders named in `bridges:` as mail arrives there
    Bridge(BridgeArgs),
    /// Print a shell completion script: `aea completions bash > ~/.local/share/bash-completion/completions/aea` (the folder made first)
    Completions(CompletionsArgs),
    /// Print the man page (roff): `aea man > ~/.local/share/man/man1/aea.1` (the folder made first)
    Man,
    /// Structured collaboration in a shared folder (the Agent Collaboration Protocol)
    #[command(subcommand)]
    Collab(CollabCommand),
    /// Serve this repository's mail tools to an agent harness: an MCP server on stdin/stdout (never approve, reject or review)
    Mcp,
}

/// `--priority` takes AEA's words and OACP's P0-P3 (SPEC §12), mapped by
/// the bridge's table.
fn parse_priority(text: &str) -> Result<Priority, String> {
    text.parse::<Priority>().or_else(|e| {
        text.parse::<crate::bridge::oacp::OacpPriority>()
            .map(crate::bridge::oacp::OacpPriority::to_aea)
            .map_err(|_| format!("{e}, or P0-P3"))
    })
}

#[derive(Args, Debug)]
pub struct ReviewArgs {
    /// In every repository `aea pending --all` lists, one after another
    #[arg(long)]
    pub all: bool,

    #[command(flatten)]
    pub signing: SigningArgs,
}

/// How a person signs, where signatures are required (SPEC §19).
#[derive(Args, Debug, Clone, Default)]
pub struct SigningArgs {
    /// Sign with this SSH key (a private key file, or the .pub of a key
    /// held by ssh-agent); default: an approver's key found in ssh-agent
    #[arg(long, value_name = "FILE")]
    pub ssh_key: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub enum ApproversCommand {
    /// List the approvers, their keys and whether you require signatures
    List,
    /// Add a person's SSH public key; signed by a current approver (the first by its own key)
    Add {
        /// The person's name, as records and listings show it
        name: String,
        /// Their public key file (`ssh-keygen` writes it as FILE.pub)
        #[arg(long, value_name = "FILE.pub")]
        key: PathBuf,
        #[command(flatten)]
        signing: SigningArgs,
    },
    /// Remove an approver; signed by a current approver
    Remove {
        /// The approver's name
        name: String,
        #[command(flatten)]
        signing: SigningArgs,
    },
    /// Require signed approvals in all your repositories (on), or stop requiring them (off); signed by a current approver
    Require {
        #[arg(value_enum)]
        state: OnOff,
        #[command(flatten)]
        signing: SigningArgs,
    },
}

/// `on` or `off`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum OnOff {
    On,
    Off,
}

#[derive(Args, Debug)]
pub struct PendingArgs {
    /// In every registered repository on this machine whose inbox you own
    /// and whose agent's key you hold, grouped by repository, oldest first
    #[arg(long)]
    pub all: bool,
}

#[derive(Debug, Args)]
pub struct ImportArgs {
    /// The protocol the files are written in
    pub protocol: crate::foreign::Protocol,

    /// Files, or folders of them (not descended into)
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
}

#[derive(Debug, Args)]
pub struct BridgeArgs {
    /// Import what is there now, then exit (default: keep watching until stopped)
    #[arg(long)]
    pub once: bool,
}

#[derive(Debug, Args)]
pub struct ExportArgs {
    /// The protocol to write
    pub protocol: crate::foreign::Protocol,

    /// Messages to export: id, file name or short reference (inbox or sent/)
    #[arg(required = true)]
    pub refs: Vec<String>,

    /// The folder to write into (an OACP agent's inbox/, for example)
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
}

// Each part of a set-up has an off and an on flag; clap reads them as bools.
#[allow(clippy::struct_excessive_bools)]
#[derive(Debug, Args)]
pub struct InitArgs {
    /// Repository to set up (default: the current directory)
    pub path: Option<PathBuf>,

    /// Agent id (default: the directory name, sanitised)
    #[arg(long)]
    pub id: Option<String>,

    /// Ready-made policy to start from
    #[arg(long)]
    pub policy: Option<PolicyPreset>,

    /// The agent harnesses to install for, comma-separated: claude, codex,
    /// gemini, opencode, copilot, cursor, cline, aider (default: Claude Code
    /// and AGENTS.md, plus every harness the repository already uses)
    #[arg(
        long,
        value_delimiter = ',',
        value_name = "LIST",
        conflicts_with = "no_agent_files"
    )]
    pub agents: Option<Vec<Agent>>,

    /// Do not touch any agent-harness file (CLAUDE.md, AGENTS.md, .claude/, …);
    /// remembered: a later init keeps them off
    #[arg(long)]
    pub no_agent_files: bool,

    /// Write agent-harness files again after an earlier --no-agent-files
    #[arg(long, conflicts_with = "no_agent_files")]
    pub agent_files: bool,

    /// Do not install git hooks (remembered: a later init keeps them off)
    #[arg(long)]
    pub no_git_hooks: bool,

    /// Install git hooks again after an earlier --no-git-hooks
    #[arg(long, conflicts_with = "no_git_hooks")]
    pub git_hooks: bool,

    /// Let other OS users deliver here: `.aea/` sticky and writable by all
    /// (1777), every state folder 0700 and the receiver's
    #[arg(long)]
    pub shared: bool,

    /// With --shared: share `.aea/` with this group (a name or a gid)
    /// instead of every user: sticky and setgid (3770), new mail 0640 in
    /// that group
    #[arg(long, requires = "shared", value_name = "GROUP")]
    pub group: Option<String>,
}

/// What a new message says; shared by `send` and `reply`.
#[derive(Debug, Args)]
pub struct ContentArgs {
    /// Message body (`--message` is the AEA protocol text's name for it)
    #[arg(
        long,
        visible_alias = "message",
        conflicts_with = "body_file",
        allow_hyphen_values = true
    )]
    pub body: Option<String>,

    /// Read the body from a file (`-` for standard input)
    #[arg(long, value_name = "FILE")]
    pub body_file: Option<PathBuf>,

    /// Priority: urgent, high, normal, low, or OACP's P0-P3 (default: normal)
    #[arg(long, value_name = "PRIORITY", value_parser = parse_priority)]
    pub priority: Option<Priority>,

    /// Ask the recipient to answer
    #[arg(long)]
    pub requires_response: bool,

    /// Structured context, a JSON object
    #[arg(long, value_name = "JSON")]
    pub context: Option<String>,

    /// Tag the message (repeatable)
    #[arg(long = "tag", value_name = "TAG")]
    pub tags: Vec<String>,

    /// Expiry: a duration (`30m`, `2h`, `7d`) or an RFC 3339 time
    #[arg(long, value_name = "DURATION|TIME", allow_hyphen_values = true)]
    pub expires: Option<When>,

    /// Attach a file of this repository by path and SHA-256 (repeatable)
    #[arg(long = "attach", value_name = "PATH")]
    pub attach: Vec<PathBuf>,

    /// Send even if the text looks like it carries a secret (never one of your aea signing keys)
    #[arg(long)]
    pub allow_secrets: bool,
}

#[derive(Debug, Args)]
pub struct SendArgs {
    /// Recipient: a path to a repository, or an agent id (repeat, or list ids as `web,docs`, to broadcast; at most 10)
    #[arg(
        long = "to",
        required_unless_present = "to_path",
        value_name = "AGENT|PATH"
    )]
    pub to: Vec<String>,

    /// Recipient's repository, as the AEA protocol text's `aea-send.sh` takes it; a `--to` id next to it must be the id there
    #[arg(long = "to-path", value_name = "PATH")]
    pub to_path: Vec<String>,

    /// An agent id found nowhere on this machine lives behind the mail
    /// remote (`sync.remote`): queue the mail for `aea sync`. Without it,
    /// only agents registered with `--remote` are sent there
    #[arg(long)]
    pub via_remote: bool,

    /// Message type
    #[arg(long = "type", value_name = "TYPE")]
    pub message_type: MessageType,

    /// One-line subject (at most 200 characters)
    #[arg(long, allow_hyphen_values = true)]
    pub subject: String,

    /// Message this one answers: reference (`m…`), id or file name; the message joins its conversation
    #[arg(long, value_name = "REF")]
    pub reply_to: Option<String>,

    /// Conversation this message belongs to (1-128 letters, digits and `-_.:`; default: the one of --reply-to, else a new one)
    #[arg(long = "conversation", value_name = "ID")]
    pub conversation: Option<String>,

    /// Send at most once per KEY: a retry with the same key and message delivers only what is missing
    #[arg(long, value_name = "KEY")]
    pub idempotency_key: Option<String>,

    /// For OACP agents: the OACP message type their inbox file gets, whatever --type says (default: the one --type maps to)
    #[arg(long, value_name = "TYPE")]
    pub oacp_type: Option<crate::bridge::oacp::OacpType>,

    #[command(flatten)]
    pub content: ContentArgs,
}

#[derive(Debug, Args)]
// Independent on/off flags of the command line, each its own switch.
#[allow(clippy::struct_excessive_bools)]
pub struct CheckArgs {
    /// Exit with 6 when unprocessed messages wait (for scripts)
    #[arg(long)]
    pub exit_code: bool,

    /// Print what an agent-harness hook shows the model: counts and short references only
    #[arg(long, value_name = "HARNESS")]
    pub hook: Option<Harness>,

    /// Hook event name (default: `hook_event_name` of the hook input on stdin, else the harness's prompt event). The session is `session_id` of the hook input: each session is told about waiting mail on its own
    #[arg(long, value_name = "NAME", requires = "hook")]
    pub event: Option<String>,

    /// List only the mail put off with `process --outcome deferred`
    #[arg(long, conflicts_with_all = ["processed", "hook"])]
    pub deferred: bool,

    /// List processed mail (oldest first), with how and when it was processed
    #[arg(long, conflicts_with = "hook")]
    pub processed: bool,

    /// List at most N messages (and N invalid files), the first in processing order; the rest are counted [default: 20]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..), conflicts_with_all = ["all", "hook"])]
    pub limit: Option<u32>,

    /// List every message, not a page
    #[arg(long, conflicts_with = "hook")]
    pub all: bool,
}

#[derive(Debug, Args)]
pub struct ShowArgs {
    /// Message reference (`m…` from `aea check`), id, file name, or a unique prefix
    #[arg(value_name = "REF")]
    pub reference: String,
}

#[derive(Debug, Args)]
pub struct AttachmentArgs {
    /// Message reference (`m…` from `aea check`), id, file name, or a unique prefix
    #[arg(value_name = "REF")]
    pub reference: String,

    /// Which attachment, numbered from 1 (default: the only one)
    #[arg(value_name = "N")]
    pub index: Option<usize>,

    /// Write the attachment to this new file (never overwritten); without it, list them
    #[arg(long, value_name = "PATH")]
    pub out: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct ReplyArgs {
    /// Message to answer: reference (`m…`), id, file name, or a unique prefix
    #[arg(value_name = "REF")]
    pub reference: String,

    /// Subject (default: "Re: " and the original subject)
    #[arg(long, allow_hyphen_values = true)]
    pub subject: Option<String>,

    /// Message type of the reply
    #[arg(long = "type", value_name = "TYPE", default_value = "response")]
    pub message_type: MessageType,

    /// To an OACP agent: the OACP message type of the reply's file (default: OACP's answer to the message's type: handoff_complete to a handoff, review_feedback to a review_request, review_addressed to a review_feedback, brainstorm_followup to a brainstorm_request or brainstorm_followup; else follow_up)
    #[arg(long, value_name = "TYPE")]
    pub oacp_type: Option<crate::bridge::oacp::OacpType>,

    #[command(flatten)]
    pub content: ContentArgs,
}

#[derive(Debug, Args)]
pub struct ProcessArgs {
    /// Message reference (`m…` from `aea check`), id, file name, or a unique prefix
    #[arg(value_name = "REF")]
    pub reference: String,

    /// How the message was handled
    #[arg(long, default_value_t = Outcome::Done)]
    pub outcome: Outcome,

    /// A short note for the marker and the log
    #[arg(long)]
    pub note: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum PolicyCommand {
    /// Print the effective policy after defaults
    Show,
    /// Print which rules were considered for a message and why the winner matched
    Explain(ShowArgs),
    /// List the held messages whose decision a proposed policy would change
    ///
    /// Decides every message this repository still holds (waiting, processed
    /// and archived) as `aea check` would, under two configs, and lists
    /// those whose action or deciding rule differs. With --config FILE, FILE
    /// is the proposed config and .aea/agent-config.yaml, which every
    /// command decides with, the current one. Without it, the proposed
    /// config is .aea/agent-config.yaml as it is in the work tree and the
    /// current one is that file as HEAD commits it: what an edit not yet
    /// committed changes (aea reads the work tree, so the edit already
    /// decides here, while every clone still decides with HEAD's).
    Replay(ReplayArgs),
    /// Print a ready-made policy (`aea init --policy NAME` starts from it), to compare a config with
    Preset {
        /// default, strict or autonomous
        name: PolicyPreset,
    },
}

#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// The proposed config: a whole agent-config.yaml, read as `aea validate` reads it
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// Only messages whose timestamp is less than this long ago (`30d`, `12h`)
    #[arg(long, value_name = "DURATION")]
    pub since: Option<Duration>,
}

#[derive(Debug, Args)]
pub struct WatchArgs {
    /// Give up after this long (`30s`, `10m`) and exit with 4
    #[arg(long, value_name = "DURATION")]
    pub timeout: Option<Duration>,

    /// Return at once if unprocessed mail is already waiting
    #[arg(long)]
    pub pending: bool,
}

#[derive(Debug, Args)]
pub struct QuarantineArgs {
    /// Message reference (`m…` from `aea check`), id, file name, or a unique prefix
    #[arg(value_name = "REF")]
    pub reference: String,

    /// Why, kept next to the file
    #[arg(long, required = true)]
    pub reason: String,
}

#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// First finish what killed processes left half-done: stale claims,
    /// staging files, interrupted sends (their sent/ copy), log lines a
    /// kill cut off (rebuilt from the markers, marked "repaired")
    #[arg(long)]
    pub fix: bool,
}

#[derive(Debug, Args)]
pub struct GcArgs {
    /// Archive processed messages processed longer ago than this
    #[arg(long, value_name = "DURATION", default_value = "7d")]
    pub older_than: Duration,

    /// List each file that would move, move nothing
    #[arg(long)]
    pub dry_run: bool,

    /// Archive the oldest processed messages, whatever their age, until
    /// half of limits.auto_gc_over remain (what aea starts on its own once
    /// the inbox holds more processed mail than that)
    #[arg(long, conflicts_with = "older_than")]
    pub auto: bool,
}

#[derive(Debug, Args)]
pub struct SyncArgs {
    /// The mail remote, any URL git reaches (default: sync.remote in agent-config.yaml)
    #[arg(long, value_name = "URL")]
    pub remote: Option<String>,

    /// Keep syncing every INTERVAL (`30s`, `5m`) until interrupted
    #[arg(long, value_name = "INTERVAL")]
    pub watch: Option<Period>,
}

#[derive(Debug, Subcommand)]
pub enum MonitorCommand {
    /// Start the monitor in the background (one per repository)
    Start,
    /// Ask the monitor to stop, and wait until it has
    Stop,
    /// Say whether the monitor runs
    Status,
    /// The monitor itself, in the foreground
    #[command(hide = true)]
    Run,
}

#[derive(Debug, Subcommand)]
pub enum HooksCommand {
    /// Install the git hooks (and with --agents the Claude Code hooks)
    Install(HooksInstallArgs),
    /// Remove aea's git hooks, putting back any hook they replaced
    Uninstall(HooksUninstallArgs),
    /// Show whether each hook is installed, outdated or bypassed
    Status,
    /// Run by the installed hooks themselves
    #[command(hide = true)]
    Run(HooksRunArgs),
}

#[derive(Debug, Args)]
pub struct HooksInstallArgs {
    /// Install even into a core.hooksPath set in the global or system git config
    #[arg(long)]
    pub force: bool,

    /// Also install (or bring up to date) the agent-harness files: for the
    /// harnesses listed (comma-separated), else for those installed before,
    /// else for the ones the repository uses (see `aea init --agents`)
    #[arg(long, value_delimiter = ',', value_name = "LIST", num_args = 0..)]
    pub agents: Option<Vec<Agent>>,
}

#[derive(Debug, Args)]
pub struct HooksUninstallArgs {
    /// Also remove what --agents installed
    #[arg(long)]
    pub agents: bool,
}

#[derive(Debug, Args)]
pub struct HooksRunArgs {
    /// Which hook is running
    pub hook: GitHook,

    /// What git passed to the hook
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    pub args: Vec<String>,
}

#[derive(Debug, Args)]
pub struct UninstallArgs {
    /// Delete .aea/ with its messages and log instead of keeping a backup
    #[arg(long)]
    pub purge: bool,
}

#[derive(Debug, Args)]
pub struct ApproveArgs {
    /// Message reference (`m…` from `aea check`), id, file name, or a unique prefix
    #[arg(value_name = "REF")]
    pub reference: String,

    /// Why, or on what terms, for the record
    #[arg(long)]
    pub note: Option<String>,

    /// Decide only if the message's SHA-256 begins with this (the
    /// `sha256:` line `aea show` printed): bytes swapped since are refused
    #[arg(long, value_name = "HEX")]
    pub sha256: Option<String>,

    #[command(flatten)]
    pub signing: SigningArgs,
}

#[derive(Debug, Args)]
pub struct RejectArgs {
    /// Message reference (`m…` from `aea check`), id, file name, or a unique prefix
    #[arg(value_name = "REF")]
    pub reference: String,

    /// Why, for the record and the agent
    #[arg(long, required = true)]
    pub reason: String,

    /// Decide only if the message's SHA-256 begins with this (the
    /// `sha256:` line `aea show` printed): bytes swapped since are refused
    #[arg(long, value_name = "HEX")]
    pub sha256: Option<String>,

    #[command(flatten)]
    pub signing: SigningArgs,
}

#[derive(Debug, Args)]
pub struct LogArgs {
    /// Only events at or after this time (RFC 3339) or this long ago (`1h`, `2d`)
    #[arg(long, value_name = "TIME|DURATION")]
    pub since: Option<When>,

    /// Only events of this kind
    #[arg(long)]
    pub event: Option<AuditEvent>,

    /// Only events about this message (reference, id or file name)
    #[arg(long, value_name = "REF")]
    pub message: Option<String>,
}

#[derive(Debug, Args)]
pub struct ValidateArgs {
    /// A message file or a folder of them (default: this repository's .aea/)
    pub path: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Keep the demo repositories in this directory instead of a temporary one
    #[arg(long, value_name = "DIR")]
    pub keep: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct TrustConfigArgs {
    /// Withdraw the trust instead of granting it
    #[arg(long)]
    pub revoke: bool,
    /// Only show the settings, their digest and whether they are trusted
    #[arg(long, conflicts_with = "revoke")]
    pub show: bool,
}

#[derive(Debug, Args)]
pub struct AgentsArgs {
    #[command(subcommand)]
    pub command: Option<AgentsCommand>,
}

#[derive(Debug, Subcommand)]
pub enum AgentsCommand {
    /// List the registered agents, their health and key fingerprints (the default)
    List,
    /// Print the ids of the enabled agents, one per line (what shell completion offers for `send --to`)
    Ids,
    /// Register an agent reached by a path or a mail remote, with its public key
    Add {
        /// The agent's id
        id: String,
        /// The repository of the agent on this machine
        #[arg(
            long,
            conflicts_with_all = ["remote", "oacp", "roo"],
            required_unless_present_any = ["remote", "oacp", "roo"]
        )]
        path: Option<PathBuf>,
        /// The mail remote through which the agent is reached (`aea sync`)
        #[arg(long, conflicts_with_all = ["oacp", "roo"])]
        remote: Option<String>,
        /// An OACP agent's folder (`<OACP_HOME>/projects/<p>/agents/<id>`):
        /// mail is written into its inbox/ as OACP YAML
        #[arg(long, value_name = "AGENT_DIR", conflicts_with = "roo")]
        oacp: Option<PathBuf>,
        /// A Roo mailbox folder (`<repo>/.roo/mailbox`): mail is written
        /// there as `to-<id>.md`
        #[arg(long, value_name = "MAILBOX_DIR")]
        roo: Option<PathBuf>,
        /// The agent's public key, `ed25519:<64 hex>` (its `agent.public_key`)
        #[arg(long)]
        key: Option<String>,
        /// Also accept unsigned mail from this id as from a known sender: a
        /// repository whose bash AEA scripts still send (its `aea whoami`
        /// says "also sends unsigned"), or a bash AEA agent with no key
        #[arg(long)]
        allow_unsigned: bool,
        /// Replace an existing entry of that id
        #[arg(long)]
        force: bool,
    },
    /// Forget an agent: its mail is then from an unknown sender
    Remove {
        /// The agent's id
        id: String,
    },
    /// Keep the entry but treat the agent as unknown until enabled again
    Disable {
        /// The agent's id
        id: String,
    },
    /// Enable a disabled agent again
    Enable {
        /// The agent's id
        id: String,
    },
    /// Pin the key an agent's repository publishes, after showing its fingerprint
    Trust {
        /// The agent's id
        id: String,
        /// Pin this key instead of the one in the agent's committed config
        #[arg(long)]
        key: Option<String>,
        /// Also accept unsigned mail from this id as from a known sender (bash AEA)
        #[arg(long)]
        allow_unsigned: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum CollabCommand {
    /// Start a collaboration folder: protocol.json, events.jsonl and the documents
    Init(CollabInitArgs),
    /// Append one event, every rule of the protocol checked first
    Event(CollabEventArgs),
    /// Append a correctly headed review to review.md and its review_submitted event
    Review(CollabReviewArgs),
    /// Classify an open question of readiness.md (or list them, without --item)
    Classify(CollabClassifyArgs),
    /// Show the phase, the owner, who is waited for, and what this participant does next
    Next(CollabParticipantArgs),
    /// Block until it is this participant's turn, or the collaboration ended
    Wait(CollabWaitArgs),
    /// Check a folder against every rule of the protocol
    Validate(CollabFolderArgs),
    /// List the collaborations this agent takes part in, and whose turn it is
    List,
}

#[derive(Debug, Args)]
pub struct CollabFolderArgs {
    /// The collaboration folder
    #[arg(long, value_name = "FOLDER")]
    pub folder: PathBuf,
}

#[derive(Debug, Args)]
pub struct CollabParticipantArgs {
    /// The collaboration folder
    #[arg(long, value_name = "FOLDER")]
    pub folder: PathBuf,

    /// This repository's agent id (the default; another is refused: one
    /// agent never acts for another)
    #[arg(long, value_name = "ID")]
    pub participant: Option<String>,
}

#[derive(Debug, Args)]
pub struct CollabInitArgs {
    /// The collaboration folder (created when missing)
    #[arg(long, value_name = "FOLDER")]
    pub folder: PathBuf,

    /// A participant's agent id; the first is the proposal owner
    #[arg(long = "participant", value_name = "ID", required = true)]
    pub participants: Vec<String>,

    /// What the collaboration must decide or produce
    #[arg(long, value_name = "TEXT")]
    pub objective: String,

    /// A concrete gate that ends the collaboration (repeatable)
    #[arg(long = "completion", value_name = "GATE", required = true)]
    pub completion: Vec<String>,

    /// The ACP schema to write: 2 (deliverables, the protocol's current
    /// form) or 1 (the seed's form, without deliverables)
    #[arg(long, value_name = "N", default_value_t = 2, value_parser = clap::value_parser!(u8).range(1..=2))]
    pub schema: u8,

    /// Schema 2: the primary deliverable's type
    #[arg(long, value_name = "TYPE", default_value = "design-spec")]
    pub primary_deliverable_type: crate::collab::DeliverableType,

    /// Schema 2: its Markdown file, in the deliverables directory (the
    /// type's own name by default; required for custom)
    #[arg(long, value_name = "NAME.md")]
    pub primary_deliverable_file: Option<String>,

    /// Schema 2: a section a custom deliverable must have (repeatable;
    /// required for custom)
    #[arg(long = "primary-deliverable-check", value_name = "SECTION")]
    pub primary_deliverable_checks: Vec<String>,

    /// Schema 2: the deliverables directory, inside the folder
    #[arg(long, value_name = "DIR", default_value = "deliverables")]
    pub deliverables_dir: String,

    /// Keep an existing collaboration, writing only missing documents
    #[arg(long)]
    pub resume: bool,
}

#[derive(Debug, Args)]
pub struct CollabEventArgs {
    #[command(flatten)]
    pub who: CollabParticipantArgs,

    /// The event (proposal_submitted, proposal_revised, question_classified, …)
    #[arg(long, value_name = "NAME")]
    pub event: crate::collab::EventName,

    /// One short sentence saying what the event is
    #[arg(long, value_name = "TEXT")]
    pub summary: String,

    /// The document the event is about (a file name inside the folder, or
    /// in schema 2 a declared deliverable; the primary deliverable by
    /// default for deliverable_* events)
    #[arg(long, value_name = "PATH")]
    pub doc: Option<String>,

    /// The seq of the event this one answers
    #[arg(long, value_name = "SEQ")]
    pub reply_to: Option<u64>,

    /// Schema 2, deliverable_* events: the deliverable's role (primary by
    /// default, or what --doc is declared as)
    #[arg(long, value_name = "ROLE")]
    pub role: Option<crate::collab::Role>,

    /// Schema 2, deliverable_frozen: the SHA-256 frozen (by default aea
    /// records the file's own; one given must match it)
    #[arg(long, value_name = "HEX")]
    pub sha256: Option<String>,
}

#[derive(Debug, Args)]
pub struct CollabReviewArgs {
    #[command(flatten)]
    pub who: CollabParticipantArgs,

    /// The seq of the event reviewed (the proposal's)
    #[arg(long, value_name = "SEQ")]
    pub reply_to: u64,

    /// One short sentence: the review_submitted event's summary
    #[arg(long, value_name = "TEXT")]
    pub summary: String,

    /// A point of the reviewer's position (repeatable)
    #[arg(long = "position", value_name = "TEXT")]
    pub position: Vec<String>,

    /// A concern (repeatable)
    #[arg(long = "concern", value_name = "TEXT")]
    pub concerns: Vec<String>,

    /// A change the proposal must make (repeatable)
    #[arg(long = "required-change", value_name = "TEXT")]
    pub required_changes: Vec<String>,

    /// An open question (repeatable)
    #[arg(long = "question", value_name = "TEXT")]
    pub questions: Vec<String>,
}

#[derive(Debug, Args)]
pub struct CollabClassifyArgs {
    /// The collaboration folder
    #[arg(long, value_name = "FOLDER")]
    pub folder: PathBuf,

    /// The item's number in readiness.md (1 is the first); without it, list the items
    #[arg(long, value_name = "N", requires = "class")]
    pub item: Option<usize>,

    /// The classification
    #[arg(long = "as", value_name = "CLASS", requires = "item")]
    pub class: Option<crate::collab::Classification>,

    /// Why a deferred item does not block (required for deferred_nonblocking)
    #[arg(long, value_name = "TEXT")]
    pub reason: Option<String>,
}

#[derive(Debug, Args)]
pub struct CollabWaitArgs {
    #[command(flatten)]
    pub who: CollabParticipantArgs,

    /// Give up after this long and exit with 4 (`0`: never)
    #[arg(long, value_name = "DURATION", default_value = "30m")]
    pub timeout: Duration,
}

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell to complete for
    pub shell: clap_complete::Shell,
}

#[cfg(test)]
mod tests {
    /// Every `aea …` an instruction names in backquotes is a command of
    /// `aea --help`, and each of its `--flags` is one that command takes.
    #[test]
    fn every_command_the_instructions_name_exists() {
        use clap::CommandFactory;
        let cli = super::Cli::command();
        let mut seen = Vec::new();
        for (name, text) in crate::harness::kits::instructions() {
            for span in text.split('`').skip(1).step_by(2) {
                let words: Vec<&str> = span.split_whitespace().collect();
                if words.first() != Some(&"aea") || words.len() < 2 {
                    continue;
                }
                let mut cmd = &cli;
                let mut path = vec!["aea"];
                for word in &words[1..] {
                    if word.starts_with('-') {
                        let flag = word.trim_start_matches('-');
                        let flag = flag.split('=').next().unwrap();
                        assert!(
                            cmd.get_arguments()
                                .chain(cli.get_arguments())
                                .any(|a| a.get_long() == Some(flag)),
                            "{name}: `{span}`: {} takes no --{flag}",
                            path.join(" ")
                        );
                    } else if let Some(sub) = cmd.find_subcommand(word) {
                        cmd = sub;
                        path.push(word);
                    } else if path.len() == 1 {
                        panic!("{name}: `{span}`: aea has no command {word}");
                    }
                }
                seen.push(path.join(" "));
            }
        }
        for expected in ["aea agents", "aea send", "aea reject", "aea collab next"] {
            assert!(seen.iter().any(|s| s == expected), "{expected}: {seen:?}");
        }
    }
}
