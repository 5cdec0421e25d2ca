//! Where a cluster's state lives: `$XDG_STATE_HOME/kinit/<cluster>/`, falling back to
//! `~/.local/state/kinit/<cluster>/` as the XDG base directory spec says. Keys, generated
//! passwords, kubeconfig, the inventory and run logs go there. Nothing is created here.

use std::path::PathBuf;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StateDirError {
    #[error("cannot locate the state folder: neither XDG_STATE_HOME nor HOME is set")]
    NoHome,
}

/// The state folder of `cluster`, from the process environment.
pub fn state_dir(cluster: &str) -> Result<PathBuf, StateDirError> {
    state_dir_from(
        cluster,
        std::env::var_os("XDG_STATE_HOME").map(PathBuf::from),
        std::env::var_os("HOME").map(PathBuf::from),
    )
}

/// The same, from explicit values (testable without touching the environment). A relative
/// `XDG_STATE_HOME` is ignored, as the spec requires.
pub fn state_dir_from(
    cluster: &str,
    xdg_state_home: Option<PathBuf>,
    home: Option<PathBuf>,
) -> Result<PathBuf, StateDirError> {
    let base = match xdg_state_home.filter(|p| p.is_absolute()) {
        Some(p) => p,
        None => home
            .filter(|h| !h.as_os_str().is_empty())
            .ok_or(StateDirError::NoHome)?
            .join(".local")
            .join("state"),
    };
    Ok(base.join("kinit").join(cluster))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xdg_wins_then_home() {
        let p = state_dir_from("k8scluster", Some("/s".into()), Some("/h".into())).unwrap();
        assert_eq!(p, PathBuf::from("/s/kinit/k8scluster"));
        let p = state_dir_from("k8scluster", Some("rel".into()), Some("/h".into())).unwrap();
        assert_eq!(p, PathBuf::from("/h/.local/state/kinit/k8scluster"));
        let p = state_dir_from("c", None, Some("/h".into())).unwrap();
        assert_eq!(p, PathBuf::from("/h/.local/state/kinit/c"));
        assert_eq!(state_dir_from("c", None, None), Err(StateDirError::NoHome));
    }
}
