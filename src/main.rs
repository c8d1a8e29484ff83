use clap::Parser;

fn main() -> std::process::ExitCode {
    let cli = match aea::cli::Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return syntax_error(&e),
    };
    let env = aea::env::Env::from_process();
    aea::run(cli, &env).into()
}

/// clap's own way, unless `--json` was asked for: then the error is one
/// JSON object on stderr, as for every other error (help and version are
/// printed as usual).
fn syntax_error(e: &clap::Error) -> std::process::ExitCode {
    use clap::error::ErrorKind;
    let json = aea::env::json_asked();
    let shown = matches!(
        e.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    );
    if !json || shown {
        e.exit();
    }
    // clap's text: the error (a line, maybe a list under it), a blank
    // line, `Usage: …`, a blank line, where to read more.
    let text = e.render().to_string();
    let message = text
        .lines()
        .take_while(|l| !l.trim().is_empty())
        .map(str::trim)
        .collect::<Vec<_>>()
        .join(" ");
    let message = message.strip_prefix("error: ").unwrap_or(&message);
    let usage = text.lines().find(|l| l.starts_with("Usage: "));
    let hint = match usage {
        Some(usage) => format!("{usage}; `--help` says more"),
        None => "`aea help` lists the commands; `aea <command> --help` their arguments".into(),
    };
    let code = u8::try_from(e.exit_code()).unwrap_or(2);
    aea::printer::Printer::default().err_value(&aea::hints::ErrorOutput::usage(
        message.to_string(),
        hint,
        code,
    ));
    std::process::ExitCode::from(code)
}
