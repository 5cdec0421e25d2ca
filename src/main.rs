//! The `kinit` binary: parse the command line, hand it to the library, print the error chain
//! once and turn the outcome into an exit code.

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = kinit::cli::Cli::parse();
    match kinit::run(cli) {
        Ok(code) => code.into(),
        Err(err) => {
            eprintln!("error: {err}");
            let mut source = std::error::Error::source(&err);
            while let Some(cause) = source {
                eprintln!("  caused by: {cause}");
                source = cause.source();
            }
            kinit::Outcome::from_error(&err).into()
        }
    }
}
