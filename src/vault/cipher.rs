//! Vault's AES256 cipher (ansible-core `VaultAES256`): PBKDF2-HMAC-SHA256 over the password
//! and the envelope's salt, 10000 rounds, 80 bytes split into the AES-256-CTR key (32), the
//! HMAC-SHA256 key (32) and the initial counter block (16). The HMAC of the ciphertext is
//! checked, in constant time, before anything is decrypted; the plaintext is PKCS#7-padded to
//! AES's 16-byte block even though CTR needs no padding (the format's choice).

use aes::Aes256;
use ctr::cipher::{KeyIvInit, StreamCipher};
use hmac::{KeyInit, Mac};
use sha2_11::Sha256;

use super::envelope::Envelope;

const ROUNDS: u32 = 10_000;
const BLOCK: usize = 16;

/// Why one password did not open one envelope.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum CipherError {
    /// A wrong password, or a changed ciphertext: the two cannot be told apart.
    #[error("HMAC verification failed")]
    Hmac,
    #[error("bad PKCS#7 padding")]
    Padding,
}

/// The keys `password` and `salt` derive: AES-256 key, HMAC key, initial counter block.
fn derive(password: &[u8], salt: &[u8]) -> [u8; 80] {
    let mut derived = [0u8; 80];
    pbkdf2::pbkdf2_hmac::<Sha256>(password, salt, ROUNDS, &mut derived);
    derived
}

/// Encrypt `plain` with `password` and `salt` (ansible-core draws 32 random bytes when none
/// is given): the HMAC and the ciphertext of an envelope.
pub fn encrypt(plain: &[u8], password: &[u8], salt: &[u8]) -> (Vec<u8>, Vec<u8>) {
    let derived = derive(password, salt);
    let (aes_key, rest) = derived.split_at(32);
    let (hmac_key, iv) = rest.split_at(32);
    let pad = BLOCK - plain.len() % BLOCK;
    let mut data = plain.to_vec();
    data.extend(std::iter::repeat_n(pad as u8, pad));
    let mut ctr = ctr::Ctr128BE::<Aes256>::new_from_slices(aes_key, iv)
        .expect("32-byte key and 16-byte counter block");
    ctr.apply_keystream(&mut data);
    let mut mac =
        hmac::Hmac::<Sha256>::new_from_slice(hmac_key).expect("HMAC takes a key of any length");
    mac.update(&data);
    (mac.finalize().into_bytes().to_vec(), data)
}

/// Decrypt `env` with `password`.
pub fn decrypt(env: &Envelope, password: &[u8]) -> Result<Vec<u8>, CipherError> {
    let derived = derive(password, &env.salt);
    let (aes_key, rest) = derived.split_at(32);
    let (hmac_key, iv) = rest.split_at(32);

    let mut mac =
        hmac::Hmac::<Sha256>::new_from_slice(hmac_key).expect("HMAC takes a key of any length");
    mac.update(&env.ciphertext);
    // `verify_slice` compares in constant time (the digest crate's `subtle` comparison).
    mac.verify_slice(&env.hmac).map_err(|_| CipherError::Hmac)?;

    let mut plain = env.ciphertext.clone();
    let mut ctr = ctr::Ctr128BE::<Aes256>::new_from_slices(aes_key, iv)
        .expect("32-byte key and 16-byte counter block");
    ctr.apply_keystream(&mut plain);
    unpad(&mut plain)?;
    Ok(plain)
}

/// Remove PKCS#7 padding in place.
fn unpad(data: &mut Vec<u8>) -> Result<(), CipherError> {
    let n = *data.last().ok_or(CipherError::Padding)? as usize;
    if n == 0
        || n > BLOCK
        || n > data.len()
        || !data[data.len() - n..].iter().all(|b| *b == n as u8)
    {
        return Err(CipherError::Padding);
    }
    data.truncate(data.len() - n);
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// `printf 'hello vault\n' | ansible-vault encrypt --vault-password-file pw` (ansible-core
    /// 2.19.4, password `kinit-vault-pw`).
    pub(crate) const HELLO: &str = "$ANSIBLE_VAULT;1.1;AES256
64633366623165613766343262303730613061306138343036613964336639323865626566386566
6639386430363930633066313433383863363438323863330a393034393866346165623365303265
32393037376139393634343932386630653166626630646362376437383137363666333061623361
3732363661386231610a393131343164653564386466326333343763643366623333386234356562
3263
";

    #[test]
    fn a_file_ansible_vault_wrote_decrypts() {
        let env = Envelope::parse(HELLO).unwrap();
        assert_eq!(decrypt(&env, b"kinit-vault-pw").unwrap(), b"hello vault\n");
    }

    #[test]
    fn a_wrong_password_fails_the_hmac() {
        let env = Envelope::parse(HELLO).unwrap();
        assert_eq!(decrypt(&env, b"kinit-vault-pX"), Err(CipherError::Hmac));
    }

    #[test]
    fn a_tampered_ciphertext_or_hmac_is_rejected_before_decrypting() {
        let mut env = Envelope::parse(HELLO).unwrap();
        env.ciphertext[0] ^= 1;
        assert_eq!(decrypt(&env, b"kinit-vault-pw"), Err(CipherError::Hmac));
        let mut env = Envelope::parse(HELLO).unwrap();
        let last = env.hmac.len() - 1;
        env.hmac[last] ^= 0x80;
        assert_eq!(decrypt(&env, b"kinit-vault-pw"), Err(CipherError::Hmac));
        let mut env = Envelope::parse(HELLO).unwrap();
        env.hmac.truncate(16);
        assert_eq!(decrypt(&env, b"kinit-vault-pw"), Err(CipherError::Hmac));
    }

    #[test]
    fn padding_is_checked() {
        let mut ok = b"abc\x02\x02".to_vec();
        unpad(&mut ok).unwrap();
        assert_eq!(ok, b"abc");
        for bad in [&b""[..], b"abc\x00", b"abc\x03\x02", b"\x11"] {
            assert_eq!(
                unpad(&mut bad.to_vec()),
                Err(CipherError::Padding),
                "{bad:?}"
            );
        }
    }
}
