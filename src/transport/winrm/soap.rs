//! WS-Management SOAP for the WinRS shell: request envelopes for Create, Command, Send,
//! Receive, Signal and Delete, and one event-driven (quick-xml) parser for every response,
//! faults included. Shapes follow recorded Windows traffic (MS-WSMV).
//!
//! One file: the envelopes and the parser follow the same message shapes, read side by side.

use base64::Engine as _;
use quick_xml::events::Event;

const SHELL_URI: &str = "http://schemas.microsoft.com/wbem/wsman/1/windows/shell/cmd";
const SHELL_NS: &str = "http://schemas.microsoft.com/wbem/wsman/1/windows/shell";
const TRANSFER: &str = "http://schemas.xmlsoap.org/ws/2004/09/transfer";
const ANONYMOUS: &str = "http://schemas.xmlsoap.org/ws/2004/08/addressing/role/anonymous";
pub const MAX_ENVELOPE: usize = 153_600;
/// WSManFault code Windows answers a Receive with when nothing happened within
/// `OperationTimeout`: poll again.
pub const CODE_TIMED_OUT: u32 = 2_150_858_793;
/// Unknown ShellId (expired or deleted shell).
pub const CODE_INVALID_SELECTORS: u32 = 2_150_858_843;

pub enum Stream {
    Stdout,
    Stderr,
}

pub struct Request {
    pub message_id: String,
    pub xml: String,
    /// Whether sending this request twice does no harm. A Command run twice runs the
    /// command twice, a Send delivers its input twice and a Receive whose response was lost
    /// has consumed that output; Create (an idle shell at worst), Signal and Delete are safe.
    pub resend_safe: bool,
}

impl Request {
    fn resend_safe(self) -> Self {
        Self {
            resend_safe: true,
            ..self
        }
    }
}

fn escape(s: &str) -> String {
    quick_xml::escape::escape(s).into_owned()
}

/// The envelope around one operation.
fn envelope(
    url: &str,
    action: &str,
    shell_id: Option<&str>,
    options: &[(&str, &str)],
    timeout_secs: u64,
    body: &str,
) -> Request {
    let message_id = format!("uuid:{}", uuid::Uuid::new_v4().to_string().to_uppercase());
    let selector = shell_id
        .map(|id| {
            format!(
                "<w:SelectorSet><w:Selector Name=\"ShellId\">{}</w:Selector></w:SelectorSet>",
                escape(id)
            )
        })
        .unwrap_or_default();
    let options = if options.is_empty() {
        String::new()
    } else {
        let opts: String = options
            .iter()
            .map(|(k, v)| format!("<w:Option Name=\"{k}\">{v}</w:Option>"))
            .collect();
        format!("<w:OptionSet>{opts}</w:OptionSet>")
    };
    let xml = format!(
        concat!(
            r#"<?xml version="1.0" encoding="utf-8"?>"#,
            r#"<s:Envelope xmlns:s="http://www.w3.org/2003/05/soap-envelope" "#,
            r#"xmlns:a="http://schemas.xmlsoap.org/ws/2004/08/addressing" "#,
            r#"xmlns:w="http://schemas.dmtf.org/wbem/wsman/1/wsman.xsd" "#,
            r#"xmlns:p="http://schemas.microsoft.com/wbem/wsman/1/wsman.xsd" "#,
            r#"xmlns:rsp="{ns}"><s:Header><a:To>{url}</a:To>"#,
            r#"<a:ReplyTo><a:Address s:mustUnderstand="true">{anon}</a:Address></a:ReplyTo>"#,
            r#"<w:MaxEnvelopeSize s:mustUnderstand="true">{max}</w:MaxEnvelopeSize>"#,
            r#"<a:MessageID>{mid}</a:MessageID>"#,
            r#"<w:Locale xml:lang="en-US" s:mustUnderstand="false"/>"#,
            r#"<p:DataLocale xml:lang="en-US" s:mustUnderstand="false"/>"#,
            r#"<w:OperationTimeout>PT{timeout}.000S</w:OperationTimeout>"#,
            r#"<w:ResourceURI s:mustUnderstand="true">{uri}</w:ResourceURI>"#,
            r#"<a:Action s:mustUnderstand="true">{action}</a:Action>{selector}{options}"#,
            r#"</s:Header><s:Body>{body}</s:Body></s:Envelope>"#
        ),
        ns = SHELL_NS,
        url = escape(url),
        anon = ANONYMOUS,
        max = MAX_ENVELOPE,
        mid = message_id,
        timeout = timeout_secs,
        uri = SHELL_URI,
        action = action,
        selector = selector,
        options = options,
        body = body,
    );
    Request {
        message_id,
        xml,
        resend_safe: false,
    }
}

/// Builds the requests for one endpoint.
pub struct Envelopes {
    pub url: String,
    pub timeout_secs: u64,
}

impl Envelopes {
    pub fn create(&self, idle_timeout_secs: u64) -> Request {
        let body = format!(
            "<rsp:Shell><rsp:InputStreams>stdin</rsp:InputStreams>\
             <rsp:OutputStreams>stdout stderr</rsp:OutputStreams>\
             <rsp:IdleTimeOut>PT{idle_timeout_secs}.000S</rsp:IdleTimeOut></rsp:Shell>"
        );
        let options = [("WINRS_NOPROFILE", "FALSE"), ("WINRS_CODEPAGE", "65001")];
        let action = format!("{TRANSFER}/Create");
        envelope(&self.url, &action, None, &options, self.timeout_secs, &body).resend_safe()
    }

    pub fn command(&self, shell_id: &str, command_line: &str) -> Request {
        let body = format!(
            "<rsp:CommandLine><rsp:Command>{}</rsp:Command></rsp:CommandLine>",
            escape(command_line)
        );
        let options = [
            ("WINRS_CONSOLEMODE_STDIN", "TRUE"),
            ("WINRS_SKIP_CMD_SHELL", "FALSE"),
        ];
        let action = format!("{SHELL_NS}/Command");
        envelope(
            &self.url,
            &action,
            Some(shell_id),
            &options,
            self.timeout_secs,
            &body,
        )
    }

    pub fn send(&self, shell_id: &str, command_id: &str, data: &[u8], end: bool) -> Request {
        let body = format!(
            "<rsp:Send><rsp:Stream Name=\"stdin\" CommandId=\"{}\"{}>{}</rsp:Stream></rsp:Send>",
            escape(command_id),
            if end { " End=\"true\"" } else { "" },
            base64::engine::general_purpose::STANDARD.encode(data)
        );
        let action = format!("{SHELL_NS}/Send");
        envelope(
            &self.url,
            &action,
            Some(shell_id),
            &[],
            self.timeout_secs,
            &body,
        )
    }

    pub fn receive(&self, shell_id: &str, command_id: &str) -> Request {
        let body = format!(
            "<rsp:Receive><rsp:DesiredStream CommandId=\"{}\">stdout stderr</rsp:DesiredStream></rsp:Receive>",
            escape(command_id)
        );
        let options = [("WSMAN_CMDSHELL_OPTION_KEEPALIVE", "TRUE")];
        let action = format!("{SHELL_NS}/Receive");
        envelope(
            &self.url,
            &action,
            Some(shell_id),
            &options,
            self.timeout_secs,
            &body,
        )
    }

    pub fn signal_terminate(&self, shell_id: &str, command_id: &str) -> Request {
        let body = format!(
            "<rsp:Signal CommandId=\"{}\"><rsp:Code>{SHELL_NS}/signal/terminate</rsp:Code></rsp:Signal>",
            escape(command_id)
        );
        let action = format!("{SHELL_NS}/Signal");
        envelope(
            &self.url,
            &action,
            Some(shell_id),
            &[],
            self.timeout_secs,
            &body,
        )
        .resend_safe()
    }

    pub fn delete(&self, shell_id: &str) -> Request {
        let action = format!("{TRANSFER}/Delete");
        envelope(
            &self.url,
            &action,
            Some(shell_id),
            &[],
            self.timeout_secs,
            "",
        )
        .resend_safe()
    }
}

/// A SOAP fault as Windows reports it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Fault {
    /// `w:TimedOut`, `w:InvalidSelectors`, …
    pub subcode: String,
    /// The WSManFault `Code` attribute (2150858793, …), when present.
    pub wsman_code: Option<u32>,
    pub message: String,
}

impl std::fmt::Display for Fault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "WS-Management fault {}", self.subcode)?;
        if let Some(code) = self.wsman_code {
            write!(f, " ({code})")?;
        }
        write!(f, ": {}", self.message.trim())
    }
}

impl Fault {
    pub fn is_timed_out(&self) -> bool {
        self.wsman_code == Some(CODE_TIMED_OUT) || self.subcode.ends_with(":TimedOut")
    }
    pub fn is_unknown_shell(&self) -> bool {
        self.wsman_code == Some(CODE_INVALID_SELECTORS)
            || self.subcode.ends_with(":InvalidSelectors")
    }
}

/// Everything kinit reads from any response.
#[derive(Debug, Default)]
pub struct Response {
    pub relates_to: Option<String>,
    pub fault: Option<Fault>,
    pub shell_id: Option<String>,
    pub command_id: Option<String>,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    pub done: bool,
    pub exit_code: Option<i32>,
}

#[derive(Debug, thiserror::Error)]
#[error("malformed WS-Management response: {0}")]
pub struct ParseError(pub String);

/// Parse a response body.
pub fn parse(xml: &[u8]) -> Result<Response, ParseError> {
    let mut reader = quick_xml::Reader::from_reader(xml);
    let mut r = Response::default();
    let mut path: Vec<String> = Vec::new();
    let mut text = String::new();
    let mut stream: Option<Stream> = None;
    let b64 = base64::engine::general_purpose::STANDARD;
    loop {
        let event = reader
            .read_event()
            .map_err(|e| ParseError(format!("at byte {}: {e}", reader.buffer_position())))?;
        match event {
            Event::Start(ref e) | Event::Empty(ref e) => {
                let name = e.local_name().as_ref().to_string();
                for a in e.attributes().flatten() {
                    let key = a.key.local_name();
                    let value = a
                        .normalized_value(quick_xml::XmlVersion::Implicit1_0)
                        .map_err(|e| ParseError(e.to_string()))?;
                    match (name.as_str(), key.as_ref()) {
                        ("WSManFault", "Code") => {
                            r.fault.get_or_insert_with(Fault::default).wsman_code =
                                value.parse().ok();
                        }
                        ("Stream", "Name") => {
                            stream = match value.as_ref() {
                                "stdout" => Some(Stream::Stdout),
                                "stderr" => Some(Stream::Stderr),
                                _ => None,
                            }
                        }
                        ("CommandState", "State") if value.ends_with("/Done") => r.done = true,
                        _ => {}
                    }
                }
                path.push(name);
                text.clear();
                if matches!(event, Event::Empty(_)) {
                    path.pop();
                }
            }
            Event::Text(t) => {
                text.push_str(&t);
            }
            Event::GeneralRef(g) => match g.resolve_char_ref() {
                Ok(Some(c)) => text.push(c),
                _ => {
                    let resolved = quick_xml::escape::resolve_predefined_entity(&g)
                        .ok_or_else(|| ParseError(format!("unknown entity &{};", &*g)))?;
                    text.push_str(resolved);
                }
            },
            Event::End(_) => {
                let name = path.pop().unwrap_or_default();
                let parent = path.last().map(String::as_str).unwrap_or("");
                let value = text.trim();
                match (parent, name.as_str()) {
                    (_, "RelatesTo") => r.relates_to = Some(value.to_string()),
                    ("SelectorSet", "Selector") | ("Shell", "ShellId") => {
                        r.shell_id.get_or_insert_with(|| value.to_string());
                    }
                    (_, "CommandId") => r.command_id = Some(value.to_string()),
                    (_, "ExitCode") => r.exit_code = value.parse().ok(),
                    ("Subcode", "Value") => {
                        r.fault.get_or_insert_with(Fault::default).subcode = value.to_string();
                    }
                    ("Reason", "Text") | ("WSManFault", "Message") => {
                        r.fault.get_or_insert_with(Fault::default).message = value.to_string();
                    }
                    (_, "Stream") => {
                        let bytes = b64
                            .decode(value)
                            .map_err(|e| ParseError(format!("stream is not base64: {e}")))?;
                        match stream.take() {
                            Some(Stream::Stdout) => r.stdout.extend_from_slice(&bytes),
                            Some(Stream::Stderr) => r.stderr.extend_from_slice(&bytes),
                            None => {}
                        }
                    }
                    _ => {}
                }
                text.clear();
            }
            Event::Eof => break,
            _ => {}
        }
    }
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_windows_timed_out_fault() {
        let xml = br#"<s:Envelope xml:lang="en-US" xmlns:s="http://www.w3.org/2003/05/soap-envelope" xmlns:a="http://schemas.xmlsoap.org/ws/2004/08/addressing" xmlns:w="http://schemas.dmtf.org/wbem/wsman/1/wsman.xsd"><s:Header><a:Action>http://schemas.dmtf.org/wbem/wsman/1/wsman/fault</a:Action><a:RelatesTo>uuid:ABC</a:RelatesTo></s:Header><s:Body><s:Fault><s:Code><s:Value>s:Receiver</s:Value><s:Subcode><s:Value>w:TimedOut</s:Value></s:Subcode></s:Code><s:Reason><s:Text xml:lang="en-US">The WS-Management service cannot complete the operation within the time specified in OperationTimeout.  </s:Text></s:Reason><s:Detail><f:WSManFault xmlns:f="http://schemas.microsoft.com/wbem/wsman/1/wsmanfault" Code="2150858793" Machine="win"><f:Message>The WS-Management service cannot complete the operation &amp; more.</f:Message></f:WSManFault></s:Detail></s:Fault></s:Body></s:Envelope>"#;
        let r = parse(xml).unwrap();
        let f = r.fault.unwrap();
        assert!(f.is_timed_out());
        assert_eq!(f.subcode, "w:TimedOut");
        assert_eq!(
            f.message,
            "The WS-Management service cannot complete the operation & more."
        );
        assert_eq!(r.relates_to.as_deref(), Some("uuid:ABC"));
    }

    #[test]
    fn parses_receive_streams_and_exit_code() {
        let xml = br#"<s:Envelope xmlns:s="http://www.w3.org/2003/05/soap-envelope" xmlns:rsp="http://schemas.microsoft.com/wbem/wsman/1/windows/shell"><s:Body><rsp:ReceiveResponse><rsp:Stream Name="stdout" CommandId="C">aGVs</rsp:Stream><rsp:Stream Name="stdout" CommandId="C">bG8=</rsp:Stream><rsp:Stream Name="stderr" CommandId="C">ZXJy</rsp:Stream><rsp:Stream Name="stdout" CommandId="C" End="true"></rsp:Stream><rsp:Stream Name="stderr" CommandId="C" End="true"/><rsp:CommandState CommandId="C" State="http://schemas.microsoft.com/wbem/wsman/1/windows/shell/CommandState/Done"><rsp:ExitCode>3</rsp:ExitCode></rsp:CommandState></rsp:ReceiveResponse></s:Body></s:Envelope>"#;
        let r = parse(xml).unwrap();
        assert_eq!(r.stdout, b"hello");
        assert_eq!(r.stderr, b"err");
        assert!(r.done);
        assert_eq!(r.exit_code, Some(3));
        assert!(r.fault.is_none());
    }

    #[test]
    fn parses_create_response_shell_id() {
        let xml = br#"<s:Envelope xmlns:s="s" xmlns:w="w" xmlns:x="x" xmlns:rsp="r"><s:Body><x:ResourceCreated><w:ReferenceParameters><w:SelectorSet><w:Selector Name="ShellId">ABC-1</w:Selector></w:SelectorSet></w:ReferenceParameters></x:ResourceCreated><rsp:Shell><rsp:ShellId>ABC-1</rsp:ShellId></rsp:Shell></s:Body></s:Envelope>"#;
        assert_eq!(parse(xml).unwrap().shell_id.as_deref(), Some("ABC-1"));
    }

    #[test]
    fn command_line_is_escaped_and_message_ids_differ() {
        let e = Envelopes {
            url: "http://h:5985/wsman".into(),
            timeout_secs: 20,
        };
        let a = e.command("S", "echo <a & b>");
        let b = e.command("S", "x");
        assert!(a.xml.contains("echo &lt;a &amp; b&gt;"));
        assert!(
            a.xml
                .contains("<w:OperationTimeout>PT20.000S</w:OperationTimeout>")
        );
        assert_ne!(a.message_id, b.message_id);
        assert!(parse(a.xml.as_bytes()).is_ok());
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        assert!(parse(b"<a><b></a>").is_err());
        assert!(parse(b"<s:Stream Name=\"stdout\">!!notbase64</s:Stream>").is_err());
    }
}
