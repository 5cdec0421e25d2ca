//! PowerShell CLIXML on stderr (`#< CLIXML` followed by `<Objs>`), decoded into plain text.
//!
//! powershell.exe serialises its error, warning, verbose, debug and information streams this
//! way when stderr is redirected. kinit decodes the whole stderr after the command finishes
//! (so records split across Receive responses are whole again): error records become their
//! text, other records get a `WARNING: `-style prefix, progress records are dropped.

use quick_xml::XmlVersion;
use quick_xml::events::Event;

const XML: XmlVersion = XmlVersion::Implicit1_0;

const MARKER: &str = "#< CLIXML";

/// Plain text for `stderr`; input without the CLIXML marker comes back unchanged.
pub fn decode(stderr: &[u8]) -> Vec<u8> {
    let text = String::from_utf8_lossy(stderr);
    if !text.contains(MARKER) {
        return stderr.to_vec();
    }
    let mut out = String::new();
    for (i, chunk) in text.split(MARKER).enumerate() {
        if i == 0 {
            out.push_str(chunk);
            continue;
        }
        match records(chunk.trim_start_matches(['\r', '\n'])) {
            Some(t) => out.push_str(&t),
            None => {
                out.push_str(MARKER);
                out.push_str(chunk);
            }
        }
    }
    out.into_bytes()
}

/// The text of the `<S S="…">` records of one `<Objs>` document (and anything after it).
fn records(doc: &str) -> Option<String> {
    let end = doc.find("</Objs>")? + "</Objs>".len();
    let mut reader = quick_xml::Reader::from_str(&doc[..end]);
    let mut out = String::new();
    let mut current: Option<String> = None;
    let mut text = String::new();
    loop {
        match reader.read_event().ok()? {
            Event::Start(e) if e.local_name().as_ref() == "S" => {
                current = e
                    .attributes()
                    .flatten()
                    .find(|a| a.key.as_ref() == "S")
                    .and_then(|a| a.normalized_value(XML).ok().map(|v| v.into_owned()));
                text.clear();
            }
            Event::Text(t) if current.is_some() => text.push_str(&t),
            Event::GeneralRef(g) if current.is_some() => {
                if let Ok(Some(c)) = g.resolve_char_ref() {
                    text.push(c);
                } else {
                    text.push_str(quick_xml::escape::resolve_predefined_entity(&g)?);
                }
            }
            Event::End(e) if e.local_name().as_ref() == "S" => {
                let value = unescape_ps(&text);
                match current.take().as_deref() {
                    Some("Error") => out.push_str(&value),
                    Some(kind @ ("warning" | "verbose" | "debug" | "information")) => {
                        out.push_str(&kind.to_uppercase());
                        out.push_str(": ");
                        out.push_str(&value);
                        if !value.ends_with('\n') {
                            out.push('\n');
                        }
                    }
                    _ => {}
                }
            }
            Event::Eof => break,
            _ => {}
        }
    }
    out.push_str(doc[end..].trim_start_matches(['\r', '\n']));
    Some(out)
}

/// PowerShell's `_xHHHH_` escapes (UTF-16 code units, so surrogate pairs span two).
fn unescape_ps(s: &str) -> String {
    let mut units: Vec<u16> = Vec::with_capacity(s.len());
    let mut rest = s;
    while let Some(at) = rest.find("_x") {
        let (head, tail) = rest.split_at(at);
        units.extend(head.encode_utf16());
        let code = tail
            .get(2..6)
            .filter(|h| tail.get(6..7) == Some("_") && h.chars().all(|c| c.is_ascii_hexdigit()))
            .and_then(|h| u16::from_str_radix(h, 16).ok());
        match code {
            Some(u) => {
                units.push(u);
                rest = &tail[7..];
            }
            None => {
                units.extend("_x".encode_utf16());
                rest = &tail[2..];
            }
        }
    }
    units.extend(rest.encode_utf16());
    String::from_utf16_lossy(&units)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "#< CLIXML\r\n<Objs Version=\"1.1.0.1\" xmlns=\"http://schemas.microsoft.com/powershell/2004/04\"><Obj S=\"progress\" RefId=\"0\"><TN RefId=\"0\"><T>System.Management.Automation.PSCustomObject</T></TN><MS><I64 N=\"SourceId\">1</I64><PR N=\"Record\"><AV>Preparing modules for first use.</AV></PR></MS></Obj><S S=\"Error\">Write-Error : boom &amp; bust_x000D__x000A_</S><S S=\"Error\">    + CategoryInfo : NotSpecified_x000D__x000A_</S><S S=\"warning\">careful</S></Objs>";

    #[test]
    fn decodes_error_and_warning_records() {
        let out = String::from_utf8(decode(SAMPLE.as_bytes())).unwrap();
        assert_eq!(
            out,
            "Write-Error : boom & bust\r\n    + CategoryInfo : NotSpecified\r\nWARNING: careful\n"
        );
    }

    #[test]
    fn plain_stderr_is_untouched() {
        assert_eq!(decode(b"just text\n"), b"just text\n");
    }

    #[test]
    fn escapes_cover_surrogates_and_literal_underscores() {
        assert_eq!(unescape_ps("a_xD83D__xDE00_b"), "a\u{1F600}b");
        assert_eq!(unescape_ps("snake_x_case_x00"), "snake_x_case_x00");
    }

    #[test]
    fn truncated_document_is_kept_raw() {
        let raw = "#< CLIXML\r\n<Objs><S S=\"Error\">cut";
        assert_eq!(String::from_utf8(decode(raw.as_bytes())).unwrap(), raw);
    }
}
