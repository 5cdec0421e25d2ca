//! `vault` and `unvault` (ansible-core `plugins/filter/encryption.py`): encrypt text into a
//! vault envelope with a secret given in the template, and open one. `vault` writes the 1.2
//! format labelled with `vault_id` (`filter_default` unless given), over 32 random salt bytes
//! unless `salt` is given, so a fixed salt gives the same text as ansible-core. `unvault`
//! tries the secret whatever the envelope's label, as Ansible does without
//! `vault_id_match`; text that is not vaulted comes back as it is.

use minijinja::value::{Kwargs, ValueKind};
use minijinja::{Error, ErrorKind, Value};

use crate::secret::Secret;
use crate::vault::{Envelope, Vault, cipher, is_vaulted};

const DEFAULT_ID: &str = "filter_default";

fn failed(filter: &str, why: impl std::fmt::Display) -> Error {
    Error::new(
        ErrorKind::InvalidOperation,
        format!("The filter plugin 'ansible.builtin.{filter}' failed: {why}"),
    )
}

/// The text of a string argument; Python's type name in the error otherwise.
fn text(filter: &str, v: &Value, what: &str) -> Result<String, Error> {
    match v.as_str() {
        Some(s) if v.kind() == ValueKind::String => Ok(s.to_string()),
        _ => Err(failed(
            filter,
            format!(
                "{what}, instead we got <class '{}'>.",
                super::core::type_debug(v.clone())
            ),
        )),
    }
}

/// `data | vault(secret, salt=None, vault_id='filter_default')`.
pub fn vault(
    data: Value,
    secret: Value,
    salt: Option<Value>,
    vault_id: Option<Value>,
    kwargs: Kwargs,
) -> Result<String, Error> {
    let secret = text("vault", &secret, "Secret passed is required to be a string")?;
    let data = text("vault", &data, "Can only vault strings")?;
    let salt: Option<Value> = salt.or(kwargs.get("salt")?).filter(|s| !s.is_none());
    let id: Option<Value> = vault_id.or(kwargs.get("vault_id")?);
    let _: Option<bool> = kwargs.get("wrap_object")?;
    kwargs.assert_all_used()?;
    let salt = match salt {
        // ansible-core's VaultAES256 refuses an empty salt and takes any other as its text
        // (`to_bytes(7)` is `b'7'`).
        Some(s) if !s.is_true() => return Err(failed("vault", "Unable to encrypt.")),
        Some(s) => crate::template::pyrepr::to_str(&s)?.into_bytes(),
        None => {
            let mut random = vec![0u8; 32];
            getrandom::fill(&mut random).map_err(|e| failed("vault", e))?;
            random
        }
    };
    let label = match &id {
        Some(v) if !v.is_none() => v.to_string(),
        _ => DEFAULT_ID.to_string(),
    };
    let (hmac, ciphertext) = cipher::encrypt(data.as_bytes(), secret.as_bytes(), &salt);
    let envelope = Envelope {
        // ansible-core writes 1.1 only for the `default` id.
        version: if label == "default" { "1.1" } else { "1.2" }.into(),
        cipher: "AES256".into(),
        label: (label != "default").then_some(label),
        salt,
        hmac,
        ciphertext,
    };
    Ok(envelope.format())
}

/// `vaulted | unvault(secret, vault_id='filter_default')`.
pub fn unvault(
    vaulted: Value,
    secret: Value,
    vault_id: Option<Value>,
    kwargs: Kwargs,
) -> Result<String, Error> {
    let secret = text(
        "unvault",
        &secret,
        "Secret passed is required to be as string",
    )?;
    let vaulted = text(
        "unvault",
        &vaulted,
        "Vault should be in the form of a string",
    )?;
    let id: Option<Value> = vault_id.or(kwargs.get("vault_id")?);
    kwargs.assert_all_used()?;
    if !is_vaulted(vaulted.as_bytes()) {
        return Ok(vaulted);
    }
    let label = match &id {
        Some(v) if !v.is_none() => v.to_string(),
        _ => DEFAULT_ID.to_string(),
    };
    Vault::new(vec![(label, Secret::new(secret))])
        .decrypt_text(vaulted.trim_start())
        .map_err(|e| failed("unvault", format!("Unable to decrypt: {e}.")))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// ansible-core 2.19.4's `'hello' | vault('pw', salt='saltsaltsalt')`, byte for byte.
    const ANSIBLE: &str = "$ANSIBLE_VAULT;1.2;AES256;filter_default\n\
        3733363136633734373336313663373437333631366337340a396261303237326165336535636130\n\
        63313932393963643965306364386133383638333730353534303837616436616363613564396633\n\
        3161393939656561320a336530356234393666306130653831316533323661386261363032653930\n\
        6539\n";

    #[test]
    fn a_fixed_salt_gives_ansibles_text_and_it_opens_again() {
        let kwargs = Kwargs::from_iter([("salt", Value::from("saltsaltsalt"))]);
        let text = vault(Value::from("hello"), Value::from("pw"), None, None, kwargs).unwrap();
        assert_eq!(text, ANSIBLE);
        let open = |secret: &str| {
            unvault(
                Value::from(ANSIBLE),
                Value::from(secret),
                None,
                Kwargs::from_iter(Vec::<(&str, Value)>::new()),
            )
        };
        assert_eq!(open("pw").unwrap(), "hello");
        assert_eq!(
            open("wrong").unwrap_err().detail().unwrap(),
            "The filter plugin 'ansible.builtin.unvault' failed: Unable to decrypt: Decryption \
             failed (no vault secrets were found that could decrypt)."
        );
    }
}
