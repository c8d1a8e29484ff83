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
    let error = aea::hints::ErrorOutput::of_clap(e);
    let code = error.error.code;
    aea::printer::Printer::default().err_value(&error);
    std::process::ExitCode::from(code)
}
