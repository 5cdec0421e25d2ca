//! `!vault` values inside YAML (`password: !vault |` followed by an envelope), replaced by their
//! plaintext string. serde_yaml keeps the tag but no position, so the lines of the tagged
//! scalars come from a second pass with `yaml-rust2`'s event parser, in document order, which
//! is the order the walk meets them in. `!vault-encrypted`, the deprecated spelling Ansible
//! still reads, is the same tag.

use std::path::Path;

use serde_yaml::Value;
use yaml_rust2::parser::{Event, MarkedEventReceiver, Parser};
use yaml_rust2::scanner::Marker;

use super::{DecryptError, Vault, VaultError};

fn is_vault_tag(suffix: &str) -> bool {
    matches!(suffix, "vault" | "vault-encrypted")
}

/// Replace every `!vault` value of `value` (parsed from `text`, read from `file`) by its
/// plaintext, with `vault`'s secrets.
pub fn decrypt_tags(
    value: &mut Value,
    text: &str,
    file: &Path,
    vault: &Vault,
) -> Result<(), DecryptError> {
    if !text.contains("!vault") {
        return Ok(());
    }
    let mut lines = tag_lines(text);
    let mut count = 0;
    count_tags(value, &mut count);
    if lines.len() != count {
        // An alias of a collection holding a vaulted value: the walk meets it twice.
        lines = vec![0; count];
    }
    walk(value, &mut lines.into_iter(), file, vault)
}

fn walk(
    v: &mut Value,
    lines: &mut std::vec::IntoIter<usize>,
    file: &Path,
    vault: &Vault,
) -> Result<(), DecryptError> {
    match v {
        Value::Tagged(t) if (t.tag == "vault" || t.tag == "vault-encrypted") => {
            let line = lines.next().filter(|l| *l > 0);
            let fail = |reason| DecryptError {
                file: file.to_path_buf(),
                line,
                reason,
            };
            let Value::String(cipher) = &t.value else {
                return Err(fail(VaultError::Format(
                    "a `!vault` value must be a string",
                )));
            };
            *v = Value::String(vault.decrypt_text(cipher).map_err(fail)?);
        }
        Value::Tagged(t) => walk(&mut t.value, lines, file, vault)?,
        Value::Sequence(items) => {
            for i in items {
                walk(i, lines, file, vault)?;
            }
        }
        Value::Mapping(map) => {
            for (k, v) in map.iter_mut() {
                let mut n = 0;
                count_tags(k, &mut n);
                // Keys are left as they are; their tags only move the line count on.
                for _ in 0..n {
                    lines.next();
                }
                walk(v, lines, file, vault)?;
            }
        }
        _ => {}
    }
    Ok(())
}

fn count_tags(v: &Value, n: &mut usize) {
    match v {
        Value::Tagged(t) if (t.tag == "vault" || t.tag == "vault-encrypted") => *n += 1,
        Value::Tagged(t) => count_tags(&t.value, n),
        Value::Sequence(items) => items.iter().for_each(|i| count_tags(i, n)),
        Value::Mapping(map) => map.iter().for_each(|(k, v)| {
            count_tags(k, n);
            count_tags(v, n);
        }),
        _ => {}
    }
}

/// Lines (1-based) of the `!vault` scalars of `text`, aliases of them included.
fn tag_lines(text: &str) -> Vec<usize> {
    #[derive(Default)]
    struct Rec {
        lines: Vec<usize>,
        anchors: std::collections::HashMap<usize, usize>,
    }
    impl MarkedEventReceiver for Rec {
        fn on_event(&mut self, ev: Event, mark: Marker) {
            match ev {
                Event::Scalar(_, _, anchor, Some(tag))
                    if tag.handle == "!" && is_vault_tag(&tag.suffix) =>
                {
                    self.lines.push(mark.line());
                    if anchor > 0 {
                        self.anchors.insert(anchor, mark.line());
                    }
                }
                Event::Alias(id) => {
                    if let Some(l) = self.anchors.get(&id) {
                        self.lines.push(*l);
                    }
                }
                _ => {}
            }
        }
    }
    let mut rec = Rec::default();
    let mut parser = Parser::new_from_str(text);
    if parser.load(&mut rec, true).is_err() {
        return Vec::new();
    }
    // A block scalar is marked where its content starts; the line to name is the tag's,
    // as in Ansible's origin of the value.
    let text_lines: Vec<&str> = text.lines().collect();
    rec.lines
        .into_iter()
        .map(|l| {
            (1..=l.min(text_lines.len()))
                .rev()
                .find(|i| text_lines[i - 1].contains("!vault"))
                .unwrap_or(l)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::secret::Secret;

    /// `ansible-vault encrypt_string --vault-id dev@pw short` (password `kinit-vault-pw`).
    const DOC: &str = "plain: 1
list:
  - x
  - secret: !vault |
          $ANSIBLE_VAULT;1.2;AES256;dev
          62653137656566326634323061313863373633636532303866353438346561343833316137313061
          3339396234363831353937356666323633633433646336300a336337323966393966303238613134
          34643137303361363137333636373431646265343339653330396331633737396333356363373031
          6263333863356430660a616633363335333262353563356564343561356664386537383466316530
          3638
";

    fn load(text: &str, pw: &str) -> Result<Value, DecryptError> {
        let mut v: Value = serde_yaml::from_str(text).unwrap();
        let vault = Vault::new(vec![("dev".into(), Secret::new(pw))]);
        decrypt_tags(&mut v, text, Path::new("v.yml"), &vault).map(|()| v)
    }

    #[test]
    fn a_vault_tag_becomes_its_plaintext() {
        let v = load(DOC, "kinit-vault-pw").unwrap();
        assert_eq!(v["list"][1]["secret"], Value::String("short".into()));
        assert_eq!(v["plain"], Value::from(1));
    }

    #[test]
    fn a_wrong_password_names_file_and_line() {
        let err = load(DOC, "wrong").unwrap_err();
        assert_eq!((err.line, err.reason), (Some(4), VaultError::NoMatch));
    }
}
