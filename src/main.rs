//! The `kinit` binary: parse the command line, hand it to the library, print the error chain
//! once and turn the outcome into an exit code.

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    // First: a Ctrl-C from here on sets a flag the run checks instead of killing the process.
    if let Err(err) = kinit::interrupt::install() {
        eprintln!("warning: cannot catch Ctrl-C: {err}");
    }
    let cli = kinit::cli::Cli::parse();
    match kinit::run(cli) {
        // Ctrl-C during a command that finished anyway (loading, listing) still says so.
        Ok(kinit::Outcome::Success) if kinit::interrupt::requested() => {
            kinit::Outcome::Interrupted.into()
        }
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
