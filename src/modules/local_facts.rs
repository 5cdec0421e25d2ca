//! `setup`'s local facts (`ansible_local`), as ansible-core's `LocalFactCollector`
//! (module_utils/facts/system/local.py) gathers them: every `*.fact` file of `fact_path`
//! (`/etc/ansible/facts.d` by default), in name order, keyed by its name without `.fact`. An
//! executable file is run and its output read; any other file is read. The text is JSON, else
//! INI (`configparser`: sections of options, `DEFAULT`'s options in every section, `%(name)s`
//! interpolation). A file that fails any of this becomes a message in upstream's words, and
//! a warning.
//!
//! The host side is a few lines of `sh` added to the one gathering command: per file its name,
//! how it went, and its output, each length-prefixed so any bytes come back intact.

use serde_json::{Map, Value};

use crate::configparser::{Parser, ReadOptions, interpolate};
use crate::transport::quote::sh;

/// Where the records begin in the gathering command's output.
pub const MARK: &str = "[local-facts]\n";

/// The `sh` that reports the `*.fact` files of `fact_path` after [`MARK`]: per file a line
/// `<kind> <rc> <out bytes> <err bytes> <path>` (`kind`: `S` the file cannot be stated, `X`
/// it was run, `F` it was read), then its output and error bytes.
pub fn script(fact_path: &str) -> String {
    format!(
        r#"printf '%s' {mark}
d={dir}
if [ -d "$d" ]; then
  t=$(mktemp -d 2>/dev/null || echo /tmp/kinit-facts.$$); mkdir -p "$t"
  for f in "$d"/*.fact; do
    [ -e "$f" ] || [ -L "$f" ] || continue
    if [ ! -e "$f" ]; then kind=S; rc=0; : > "$t/o"; : > "$t/e"
    elif [ -x "$f" ] && [ -n "$(find "$f" -prune -perm -u+x 2>/dev/null)" ]; then
      kind=X; "$f" > "$t/o" 2> "$t/e"; rc=$?
    else kind=F; rc=0; cat -- "$f" > "$t/o" 2>/dev/null; : > "$t/e"; fi
    printf '%s %s %s %s %s\n' "$kind" "$rc" "$(wc -c < "$t/o")" "$(wc -c < "$t/e")" "$f"
    cat "$t/o" "$t/e"
  done
  rm -rf "$t"
fi
"#,
        mark = sh(MARK),
        dir = sh(fact_path.trim_end_matches('/')),
    )
}

/// The `ansible_local` mapping from what [`script`] printed, and the warnings upstream gives.
pub fn parse(mut out: &[u8]) -> (Map<String, Value>, Vec<String>) {
    let mut facts = Map::new();
    let mut warnings = Vec::new();
    while let Some(nl) = out.iter().position(|b| *b == b'\n') {
        let head = String::from_utf8_lossy(&out[..nl]).into_owned();
        let mut parts = head.splitn(5, ' ');
        let (Some(kind), Some(rc), Some(n_out), Some(n_err), Some(path)) = (
            parts.next(),
            parts.next(),
            parts.next().and_then(|n| n.trim().parse::<usize>().ok()),
            parts.next().and_then(|n| n.trim().parse::<usize>().ok()),
            parts.next(),
        ) else {
            break;
        };
        let body = &out[nl + 1..];
        if body.len() < n_out + n_err {
            break;
        }
        let (stdout, stderr) = (&body[..n_out], &body[n_out..n_out + n_err]);
        out = &body[n_out + n_err..];
        let name = path.rsplit('/').next().unwrap_or(path).replace(".fact", "");
        let fact = match kind {
            "S" => Err(format!(
                "Could not stat fact ({path}): [Errno 2] No such file or directory: '{path}'"
            )),
            "X" if rc != "0" => Err(format!(
                "Failure executing fact script ({path}), rc: {rc}, err: {}",
                String::from_utf8_lossy(stderr)
            )),
            _ => match std::str::from_utf8(stdout) {
                Ok(text) => read_fact(path, text, &mut warnings),
                Err(_) => Err(format!(
                    "error loading fact - output of running \"{path}\" was not utf-8"
                )),
            },
        };
        let fact = fact.unwrap_or_else(|why| {
            warnings.push(why.clone());
            Value::String(why)
        });
        facts.insert(name, fact);
    }
    (facts, warnings)
}

/// A fact file's text: JSON, else INI. A broken INI value makes the fact that message (with a
/// warning); text that is neither is an error.
fn read_fact(path: &str, text: &str, warnings: &mut Vec<String>) -> Result<Value, String> {
    if let Ok(v) = serde_json::from_str::<Value>(text) {
        return Ok(v);
    }
    let unreadable =
        || format!("error loading facts as JSON or ini - please check content: {path}");
    let mut ini = Parser::default();
    ini.read(text, ReadOptions::default())
        .map_err(|_| unreadable())?;
    // Upstream's loop: once an option fails, the fact is that message, and going on with
    // the message as if it were the mapping fails the whole fact with Python's `TypeError`.
    let convert = |e: &str| Err(format!("Failed to convert ({path}) to JSON: {e}"));
    let mut fact: Result<Map<String, Value>, String> = Ok(Map::new());
    for (section, _) in &ini.sections {
        match &mut fact {
            Ok(map) => {
                map.entry(section.clone())
                    .or_insert_with(|| Value::Object(Map::new()));
            }
            // `sect not in fact` on a string is a substring test.
            Err(msg) if !msg.contains(section.as_str()) => {
                return convert("'str' object does not support item assignment");
            }
            Err(_) => {}
        }
        // `cp.options(sect)`: the section's options, then the defaults it does not set.
        let items = ini.items(section).unwrap_or_default();
        for option in ini.options(section) {
            let raw = items
                .iter()
                .find(|(k, _)| *k == option)
                .and_then(|(_, v)| v.clone())
                .unwrap_or_default();
            match (
                interpolate(&items, section, &option, &raw, false),
                &mut fact,
            ) {
                (Ok(v), Ok(map)) => {
                    if let Some(Value::Object(values)) = map.get_mut(section) {
                        values.insert(option.clone(), Value::String(v));
                    }
                }
                (Ok(_), Err(_)) => return convert("string indices must be integers, not 'str'"),
                (Err(ex), _) => {
                    let why =
                        format!("error loading facts as ini - please check content: {path} ({ex})");
                    warnings.push(why.clone());
                    fact = Err(why);
                }
            }
        }
    }
    Ok(match fact {
        Ok(map) => Value::Object(map),
        Err(msg) => Value::String(msg),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn record(kind: &str, rc: i32, out: &str, err: &str, path: &str) -> Vec<u8> {
        let mut r = format!("{kind} {rc} {} {} {path}\n", out.len(), err.len()).into_bytes();
        r.extend_from_slice(out.as_bytes());
        r.extend_from_slice(err.as_bytes());
        r
    }

    #[test]
    fn facts_read_as_json_then_ini_with_upstreams_messages() {
        let mut out = Vec::new();
        out.extend(record(
            "F",
            0,
            "[general]\nbar=loaded\n",
            "",
            "/f/preferences.fact",
        ));
        out.extend(record(
            "X",
            0,
            "{\"script_ran\": true}\n",
            "",
            "/f/good.fact",
        ));
        out.extend(record("X", 1, "", "boom\n", "/f/bad_script.fact"));
        out.extend(record("S", 0, "", "", "/f/dead.fact"));
        out.extend(record("F", 0, "wontbeseen=ever\n", "", "/f/noheader.fact"));
        out.extend(record(
            "F",
            0,
            "[bad fact]\nvalue = a % b\n",
            "",
            "/f/bad.fact",
        ));
        out.extend(record(
            "F",
            0,
            "[DEFAULT]\nroot=/srv\n[app]\ndir=%(root)s/app\npct=50%%\n",
            "",
            "/f/interp.fact",
        ));
        let (facts, warnings) = parse(&out);
        assert_eq!(facts["preferences"], json!({"general": {"bar": "loaded"}}));
        assert_eq!(facts["good"], json!({"script_ran": true}));
        assert_eq!(
            facts["bad_script"],
            json!("Failure executing fact script (/f/bad_script.fact), rc: 1, err: boom\n")
        );
        assert_eq!(
            facts["dead"],
            json!(
                "Could not stat fact (/f/dead.fact): [Errno 2] No such file or directory: \
                 '/f/dead.fact'"
            )
        );
        assert_eq!(
            facts["noheader"],
            json!("error loading facts as JSON or ini - please check content: /f/noheader.fact")
        );
        // Python: configparser's InterpolationSyntaxError for `a % b`.
        assert_eq!(
            facts["bad"],
            json!(
                "error loading facts as ini - please check content: /f/bad.fact ('%' must be \
                 followed by '%' or '(', found: '% b')"
            )
        );
        assert_eq!(
            facts["interp"],
            json!({"app": {"dir": "/srv/app", "pct": "50%", "root": "/srv"}})
        );
        assert_eq!(warnings.len(), 4);
    }
}
