//! Text encodings named as Python names them, for the modules that take an encoding
//! (`template`'s `output_encoding`, `find`'s `encoding`): `utf-8`, `utf-16` (with its byte
//! order mark), `latin-1`, `ascii`, and what the WHATWG encoding standard names (`gbk`,
//! `shift_jis`, `windows-1252`, `koi8-r`...). Python's own spellings are accepted: any case,
//! `_`, `-` or a space between the parts (`encodings.normalize_encoding`).

use encoding_rs::Encoding;

/// One codec Python would find for a name.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Codec {
    Utf8,
    /// `utf-16` (`bom`: written with, and read by, its byte order mark), `utf-16-le`/`-be`.
    Utf16 {
        big: bool,
        bom: bool,
    },
    /// ISO-8859-1 itself: WHATWG reads the `latin1` label as windows-1252.
    Latin1,
    /// 7-bit ASCII: WHATWG reads the `ascii` label as windows-1252.
    Ascii,
    Whatwg(&'static Encoding),
}

/// Python's `UnicodeEncodeError` as ansible-core reports it: the codec (`charmap` for the
/// single-byte tables), the character escaped as Python's repr, where, and why.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("'{codec}' codec can't encode character '{shown}' in position {position}: {why}")]
pub struct Unencodable {
    pub codec: String,
    pub shown: String,
    pub position: usize,
    pub why: &'static str,
}

impl Unencodable {
    fn new(c: char, position: usize, codec: &str, why: &'static str) -> Self {
        let n = u32::from(c);
        let shown = match n {
            0..=0xFF => format!("\\x{n:02x}"),
            0x100..=0xFFFF => format!("\\u{n:04x}"),
            _ => format!("\\U{n:08x}"),
        };
        Unencodable {
            codec: codec.to_string(),
            shown,
            position,
            why,
        }
    }
}

impl Codec {
    /// The codec for `name`, or `None` where Python raises `LookupError` (`unknown encoding`).
    /// An empty name is UTF-8, Python's default for the files these modules read and write.
    pub fn lookup(name: &str) -> Option<Codec> {
        let norm: String = name
            .trim()
            .to_ascii_lowercase()
            .chars()
            .map(|c| if c == '-' || c == ' ' { '_' } else { c })
            .collect();
        Some(match norm.as_str() {
            "" | "utf_8" | "utf8" | "u8" | "utf" | "cp65001" => Codec::Utf8,
            "utf_16" | "utf16" | "u16" => Codec::Utf16 {
                big: false,
                bom: true,
            },
            "utf_16_le" | "utf_16le" => Codec::Utf16 {
                big: false,
                bom: false,
            },
            "utf_16_be" | "utf_16be" => Codec::Utf16 {
                big: true,
                bom: false,
            },
            "latin_1" | "latin1" | "latin" | "iso_8859_1" | "iso8859_1" | "l1" | "8859"
            | "cp819" => Codec::Latin1,
            "ascii" | "us_ascii" | "646" => Codec::Ascii,
            _ => Codec::Whatwg(
                Encoding::for_label(name.trim().as_bytes())
                    .or_else(|| Encoding::for_label(norm.as_bytes()))
                    .filter(|e| e.output_encoding() == *e)?,
            ),
        })
    }

    /// `text` as Python's strict encoder writes it (`utf-16` with its byte order mark), or
    /// the first character the encoding lacks as Python's `UnicodeEncodeError` tells it;
    /// `name` is the encoding as written, which names a multi-byte codec there.
    pub fn encode(&self, text: &str, name: &str) -> Result<Vec<u8>, Unencodable> {
        let narrow = |limit: u32, codec: &str, why: &'static str| {
            let mut out = Vec::with_capacity(text.len());
            for (i, c) in text.chars().enumerate() {
                match u8::try_from(u32::from(c)) {
                    Ok(b) if u32::from(b) < limit => out.push(b),
                    _ => return Err(Unencodable::new(c, i, codec, why)),
                }
            }
            Ok(out)
        };
        Ok(match self {
            Codec::Utf8 => text.as_bytes().to_vec(),
            Codec::Utf16 { big, bom } => {
                let mut out = Vec::with_capacity(text.len() * 2 + 2);
                if *bom {
                    out.extend_from_slice(&[0xFF, 0xFE]);
                }
                for unit in text.encode_utf16() {
                    out.extend_from_slice(&if *big {
                        unit.to_be_bytes()
                    } else {
                        unit.to_le_bytes()
                    });
                }
                out
            }
            Codec::Latin1 => narrow(0x100, "latin-1", "ordinal not in range(256)")?,
            Codec::Ascii => narrow(0x80, "ascii", "ordinal not in range(128)")?,
            Codec::Whatwg(enc) => {
                let (bytes, _, lossy) = enc.encode(text);
                if lossy {
                    // The first character the encoding lacks, as Python names it.
                    let (i, c) = text
                        .chars()
                        .enumerate()
                        .find(|(_, c)| enc.encode(&c.to_string()).2)
                        .unwrap_or((0, '?'));
                    return Err(if enc.is_single_byte() {
                        Unencodable::new(c, i, "charmap", "character maps to <undefined>")
                    } else {
                        let codec = name.trim().to_ascii_lowercase();
                        Unencodable::new(c, i, &codec, "illegal multibyte sequence")
                    });
                }
                bytes.into_owned()
            }
        })
    }

    /// `bytes` read as Python's strict decoder reads them, or the offset of the first byte
    /// it cannot decode (`UnicodeDecodeError`'s `start`).
    pub fn decode(&self, bytes: &[u8]) -> Result<String, usize> {
        match self {
            Codec::Utf8 => match std::str::from_utf8(bytes) {
                Ok(s) => Ok(s.to_string()),
                Err(e) => Err(e.valid_up_to()),
            },
            Codec::Latin1 => Ok(bytes.iter().map(|b| char::from(*b)).collect()),
            Codec::Ascii => match bytes.iter().position(|b| *b > 0x7F) {
                Some(i) => Err(i),
                None => Ok(bytes.iter().map(|b| char::from(*b)).collect()),
            },
            Codec::Utf16 { big, bom } => {
                let (big, body) = match (bom, bytes) {
                    (true, [0xFF, 0xFE, rest @ ..]) => (false, rest),
                    (true, [0xFE, 0xFF, rest @ ..]) => (true, rest),
                    _ => (*big, bytes),
                };
                let skipped = bytes.len() - body.len();
                let units = body.chunks(2).map(|c| match (c, big) {
                    ([a, b], false) => Some(u16::from_le_bytes([*a, *b])),
                    ([a, b], true) => Some(u16::from_be_bytes([*a, *b])),
                    _ => None,
                });
                let mut out = String::with_capacity(body.len() / 2);
                let mut pending: Option<(u16, usize)> = None;
                for (i, unit) in units.enumerate() {
                    let at = skipped + 2 * i;
                    let Some(u) = unit else { return Err(at) };
                    match (pending.take(), u) {
                        (None, 0xD800..=0xDBFF) => pending = Some((u, at)),
                        (None, 0xDC00..=0xDFFF) => return Err(at),
                        (None, _) => out.push(char::from_u32(u32::from(u)).unwrap_or('\u{FFFD}')),
                        (Some((hi, _)), 0xDC00..=0xDFFF) => out.push(
                            char::decode_utf16([hi, u])
                                .next()
                                .and_then(Result::ok)
                                .unwrap_or('\u{FFFD}'),
                        ),
                        (Some((_, start)), _) => return Err(start),
                    }
                }
                match pending {
                    Some((_, start)) => Err(start),
                    None => Ok(out),
                }
            }
            Codec::Whatwg(enc) => {
                let mut decoder = enc.new_decoder_without_bom_handling();
                let mut out = String::with_capacity(
                    decoder
                        .max_utf8_buffer_length_without_replacement(bytes.len())
                        .unwrap_or(bytes.len() * 3),
                );
                let (result, read) =
                    decoder.decode_to_string_without_replacement(bytes, &mut out, true);
                match result {
                    encoding_rs::DecoderResult::InputEmpty => Ok(out),
                    encoding_rs::DecoderResult::Malformed(bad, after) => {
                        Err(read - usize::from(bad) - usize::from(after))
                    }
                    encoding_rs::DecoderResult::OutputFull => Err(read),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_read_as_python_normalizes_them() {
        assert_eq!(Codec::lookup("UTF_8"), Some(Codec::Utf8));
        assert_eq!(Codec::lookup("Latin-1"), Some(Codec::Latin1));
        assert_eq!(Codec::lookup("us-ascii"), Some(Codec::Ascii));
        assert_eq!(
            Codec::lookup("utf-16-be"),
            Some(Codec::Utf16 {
                big: true,
                bom: false
            })
        );
        assert_eq!(Codec::lookup("gbk"), Some(Codec::Whatwg(encoding_rs::GBK)));
        assert_eq!(
            Codec::lookup("shift_jis"),
            Some(Codec::Whatwg(encoding_rs::SHIFT_JIS))
        );
        assert_eq!(Codec::lookup("idontexist"), None);
    }

    #[test]
    fn decoding_is_strict_and_says_where_it_stopped() {
        // 你好 in GBK (Python: '你好'.encode('gbk') == b'\xc4\xe3\xba\xc3').
        let gbk = [0xC4, 0xE3, 0xBA, 0xC3];
        assert_eq!(Codec::Utf8.decode(&gbk), Err(0));
        assert_eq!(Codec::lookup("gbk").unwrap().decode(&gbk).unwrap(), "你好");
        assert_eq!(Codec::Utf8.decode(b"ab\xff"), Err(2));
        assert_eq!(Codec::Ascii.decode(b"ab\xe9"), Err(2));
        assert_eq!(Codec::Latin1.decode(b"\xe9").unwrap(), "é");
        let utf16 = Codec::lookup("utf-16").unwrap();
        assert_eq!(utf16.decode(b"\xff\xfea\x00").unwrap(), "a");
        assert_eq!(utf16.decode(b"\xfe\xff\x00a").unwrap(), "a");
        assert_eq!(utf16.decode(b"\xff\xfea\x00b"), Err(4));
        // A lone surrogate is where Python's utf-16 decoder stops too.
        assert_eq!(utf16.decode(b"\xff\xfe\x00\xd8a\x00"), Err(2));
    }
}
