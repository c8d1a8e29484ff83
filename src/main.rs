use clap::Parser;

fn main() -> std::process::ExitCode {
    let cli = aea::cli::Cli::parse();
    let env = aea::env::Env::from_process();
    aea::run(cli, &env).into()
}
