//! Ctrl-C (and SIGTERM, which service managers and CI runners send on a timeout) for the
//! whole process. `install` runs on the first line of `main`, before the command line is
//! parsed, so neither signal takes kinit's default action (death by signal, with a
//! half-written state, temp files or the cluster lock left behind): it only sets a flag. The run's
//! runtime turns that flag, and any later SIGINT, into its cancellation token (`watch`);
//! blocking waits before the runtime (the cluster lock) poll `requested`; a command that
//! reacts to every interrupt listens with `Signals`. This is the one place signals are caught.

use std::sync::Arc;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio_util::sync::CancellationToken;

static FLAG: OnceLock<Arc<AtomicBool>> = OnceLock::new();

fn flag() -> &'static Arc<AtomicBool> {
    FLAG.get_or_init(|| Arc::new(AtomicBool::new(false)))
}

/// Catch SIGINT and SIGTERM from now on (they set the flag `requested` reads).
pub fn install() -> std::io::Result<()> {
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, flag().clone())?;
    }
    Ok(())
}

/// Whether Ctrl-C arrived since `install`.
pub fn requested() -> bool {
    flag().load(Ordering::SeqCst)
}

/// Every SIGINT and SIGTERM from the moment it is made, one `recv` each: for a command that
/// reacts to each interrupt (`kinit ci` forwards the first to its child and keeps tearing down
/// after the second). Without a signal driver it polls the process-wide flag instead.
pub struct Signals {
    streams: Option<(tokio::signal::unix::Signal, tokio::signal::unix::Signal)>,
}

impl Signals {
    /// Listen from now on (inside the runtime).
    pub fn listen() -> Signals {
        use tokio::signal::unix::{SignalKind, signal};
        let streams = signal(SignalKind::interrupt())
            .and_then(|i| Ok((i, signal(SignalKind::terminate())?)))
            .ok();
        Signals { streams }
    }

    /// The next SIGINT or SIGTERM.
    pub async fn recv(&mut self) {
        match &mut self.streams {
            Some((int, term)) => {
                tokio::select! {
                    _ = int.recv() => {}
                    _ = term.recv() => {}
                }
            }
            None => loop {
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                if requested() {
                    return;
                }
            },
        }
    }
}

/// Cancel `cancel` on Ctrl-C, including one that arrived before this was called (while the
/// inputs were being parsed). Runs until the signal arrives; abort the handle when done.
pub fn watch(cancel: CancellationToken) -> tokio::task::JoinHandle<()> {
    // Now, not in the task: the run must not start a first task before the task is polled.
    if requested() {
        cancel.cancel();
    }
    tokio::spawn(async move {
        // Listen first, then look at the flag: a signal in between is seen by one of them.
        let mut signals = Signals::listen();
        if requested() {
            cancel.cancel();
            return;
        }
        signals.recv().await;
        cancel.cancel();
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_caught_sigint_sets_the_flag_instead_of_ending_the_process() {
        install().unwrap();
        assert!(!requested());
        signal_hook::low_level::raise(signal_hook::consts::SIGINT).unwrap();
        assert!(requested());
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let cancel = CancellationToken::new();
        rt.block_on(async { watch(cancel.clone()).await }).unwrap();
        assert!(cancel.is_cancelled(), "an earlier Ctrl-C cancels the run");
    }
}
