//! Command text for remote shells, assembled in one place: POSIX sh quoting, PowerShell
//! quoting and `-EncodedCommand`, and the wrappers for env, cwd and become.

use base64::Engine as _;

use super::{BecomeMethod, BecomeOptions, ExecRequest};

/// Quote one word for POSIX sh: safe words stay bare, everything else goes in single quotes.
pub fn sh(word: &str) -> String {
    let safe = !word.is_empty()
        && word
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"@%+=:,./-_".contains(&b));
    if safe {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// Join argv into one sh command line.
pub fn sh_join<S: AsRef<str>>(argv: &[S]) -> String {
    argv.iter()
        .map(|a| sh(a.as_ref()))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Quote one string as a PowerShell single-quoted literal.
pub fn ps(word: &str) -> String {
    format!("'{}'", word.replace('\'', "''"))
}

/// `powershell.exe -EncodedCommand` argument: UTF-16LE, base64.
pub fn ps_encode(script: &str) -> String {
    let utf16: Vec<u8> = script.encode_utf16().flat_map(u16::to_le_bytes).collect();
    base64::engine::general_purpose::STANDARD.encode(utf16)
}

/// The full command line that runs `script` in a non-interactive PowerShell.
pub fn ps_command_line(script: &str) -> String {
    format!(
        "powershell.exe -NoProfile -NonInteractive -ExecutionPolicy Bypass -EncodedCommand {}",
        ps_encode(script)
    )
}

/// The sh text that runs `req.script` with its env, cwd and become applied.
///
/// Become uses `sudo -H -S -n` (or `-S` with a password fed on stdin by the caller) and runs the
/// script through `sh -c`, so the script itself needs no knowledge of sudo.
pub fn sh_wrap(req: &ExecRequest) -> String {
    let mut inner = String::new();
    if let Some(cwd) = &req.cwd {
        inner.push_str(&format!("cd {} && ", sh(cwd)));
    }
    for (k, v) in &req.env {
        inner.push_str(&format!("export {}={}; ", k, sh(v)));
    }
    inner.push_str(&req.script);
    match &req.become_ {
        None => inner,
        Some(b) if b.method == BecomeMethod::Su => become_su(b, &inner),
        Some(b) => become_sudo(b, &inner),
    }
}

/// `su [flags] user -c 'sh -c ...'`, as ansible-core's `su` become plugin runs it (the
/// user's login shell runs `-c`). A password (the first stdin line, as for sudo) is all su
/// gets on its stdin, so a su that asks for none (root's) leaves it unread and nowhere else;
/// the command gets the rest of the real stdin back. su's prompt (on its stderr, no line
/// break) is taken out of what su says; the command's own stderr bypasses that filter.
fn become_su(b: &BecomeOptions, inner: &str) -> String {
    let user = sh(b.user.as_deref().unwrap_or("root"));
    let flags = b
        .flags
        .as_deref()
        .map(|f| format!("{} ", f.trim()))
        .unwrap_or_default();
    if b.password.is_none() {
        return format!(
            "su {flags}{user} -c {}",
            sh(&format!("sh -c {}", sh(inner)))
        );
    }
    let run = sh(&format!(
        "exec 0<&5 5<&- 2>&3 3>&- 4>&-; sh -c {}",
        sh(inner)
    ));
    format!(
        "IFS= read -r kinit_pw; exec 3>&2 4>&1 5<&0; kinit_rc=$(mktemp) || exit 1; \
         {{ printf '%s\\n' \"$kinit_pw\" | su {flags}{user} -c {run}; echo $? > \"$kinit_rc\"; }} \
         2>&1 1>&4 | sed 's/^Password: *//' >&3; unset kinit_pw; \
         rc=$(cat \"$kinit_rc\"); rm -f \"$kinit_rc\"; exit \"${{rc:-1}}\""
    )
}

fn become_sudo(b: &BecomeOptions, inner: &str) -> String {
    let user = sh(b.user.as_deref().unwrap_or("root"));
    // kinit passes `-n` (and `-S` where it has a password) itself.
    let flags = match b.flags.as_deref() {
        Some(f) => f
            .split_whitespace()
            .filter(|f| !matches!(*f, "-n" | "-S" | "--non-interactive" | "--stdin"))
            .collect::<Vec<_>>()
            .join(" "),
        None => "-H".to_string(),
    };
    let flags = if flags.is_empty() {
        String::new()
    } else {
        format!("{flags} ")
    };
    let run = format!("sudo {flags}-n -u {user} -- sh -c {}", sh(inner));
    if b.password.is_none() {
        return run;
    }
    // The password arrives as the first stdin line. It is given to `sudo -v` alone (never
    // in argv, never on the command's stdin, even when sudo asks for none) with an empty
    // prompt and sudo's own messages dropped, so neither a prompt nor the password can show
    // up in output; the command then runs on the cached credential. `exit $?` keeps the
    // shell from exec'ing the last sudo, which would change its parent (sudo caches per
    // parent process when there is no terminal).
    format!(
        "IFS= read -r kinit_pw; printf '%s\\n' \"$kinit_pw\" | sudo -S -p '' -v 2>/dev/null \
         || {{ echo 'sudo: the become password was refused' >&2; exit 1; }}; unset kinit_pw; \
         {run}; exit $?"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sh_quotes_only_what_needs_it() {
        assert_eq!(sh("abc/def.txt"), "abc/def.txt");
        assert_eq!(sh(""), "''");
        assert_eq!(sh("a b"), "'a b'");
        assert_eq!(sh("it's"), r"'it'\''s'");
        assert_eq!(sh("$(rm -rf /)"), "'$(rm -rf /)'");
    }

    #[test]
    fn ps_doubles_single_quotes() {
        assert_eq!(ps("C:\\it's"), "'C:\\it''s'");
    }

    #[test]
    fn ps_encode_is_utf16le_base64() {
        // "a" is 0x61 0x00 in UTF-16LE.
        assert_eq!(ps_encode("a"), "YQA=");
    }

    #[test]
    fn wrap_applies_cwd_env_and_become() {
        let req = ExecRequest {
            script: "echo $X".into(),
            env: vec![("X".into(), "a b".into())],
            cwd: Some("/tmp".into()),
            become_: Some(BecomeOptions::default()),
            ..ExecRequest::default()
        };
        assert_eq!(
            sh_wrap(&req),
            r"sudo -H -n -u root -- sh -c 'cd /tmp && export X='\''a b'\''; echo $X'"
        );
    }

    #[test]
    fn become_flags_and_su() {
        let req = |method, flags: Option<&str>| ExecRequest {
            script: "id".into(),
            become_: Some(BecomeOptions {
                user: Some("app".into()),
                method,
                flags: flags.map(str::to_string),
                ..BecomeOptions::default()
            }),
            ..ExecRequest::default()
        };
        // kinit keeps `-n` its own; the user's flags replace `-H`.
        assert_eq!(
            sh_wrap(&req(BecomeMethod::Sudo, Some("-E -S -n"))),
            "sudo -E -n -u app -- sh -c id"
        );
        assert_eq!(
            sh_wrap(&req(BecomeMethod::Su, None)),
            r"su app -c 'sh -c id'"
        );
        assert_eq!(
            sh_wrap(&req(BecomeMethod::Su, Some("-l"))),
            r"su -l app -c 'sh -c id'"
        );
    }
}
