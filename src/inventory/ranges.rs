//! Host ranges in inventory names: `web[01:05]`, `db-[a:c]`, `node[0:10:2]` (inclusive ends,
//! zero padding kept from the start value, several ranges per name allowed).

use super::InventoryError;

/// Expand every `[start:end(:step)]` in `name`; a name without one comes back alone.
pub fn expand(name: &str) -> Result<Vec<String>, InventoryError> {
    let Some(open) = name.find('[') else {
        return Ok(vec![name.to_string()]);
    };
    let err = |reason: &str| InventoryError::Range {
        pattern: name.to_string(),
        reason: reason.to_string(),
    };
    // A `[` is only ever a range in a host name; Ansible refuses `h[1:` and `web[0]` too.
    let Some(close_rel) = name[open..].find(']') else {
        return Err(err("the `[` is never closed"));
    };
    let close = open + close_rel;
    let inner = &name[open + 1..close];
    if !inner.contains(':') {
        return Err(err("expected `[start:end]` or `[start:end:step]`"));
    }
    let parts: Vec<&str> = inner.split(':').collect();
    let (beg, end, step) = match parts.as_slice() {
        [b, e] => (*b, *e, 1usize),
        [b, e, s] => (
            *b,
            *e,
            s.parse::<usize>()
                .ok()
                .filter(|s| *s > 0)
                .ok_or_else(|| err("the step must be a positive number"))?,
        ),
        _ => return Err(err("expected `[start:end]` or `[start:end:step]`")),
    };
    let (head, tail) = (&name[..open], &name[close + 1..]);
    let beg = if beg.is_empty() { "0" } else { beg };
    if end.is_empty() {
        return Err(err("the range has no end"));
    }
    let items: Vec<String> = if beg.bytes().all(|b| b.is_ascii_digit()) {
        if !end.bytes().all(|b| b.is_ascii_digit()) {
            return Err(err("start and end must both be numbers or both letters"));
        }
        let width = if beg.len() > 1 && beg.starts_with('0') {
            beg.len()
        } else {
            0
        };
        let (b, e): (u64, u64) = (
            beg.parse().map_err(|_| err("start is not a number"))?,
            end.parse().map_err(|_| err("end is not a number"))?,
        );
        if b > e {
            return Err(err("the start is after the end"));
        }
        (b..=e)
            .step_by(step)
            .map(|n| format!("{n:0width$}"))
            .collect()
    } else {
        let (b, e) = (single_letter(beg), single_letter(end));
        let (Some(b), Some(e)) = (b, e) else {
            return Err(err("alphabetic ranges take one letter at each end"));
        };
        if b > e {
            return Err(err("the start is after the end"));
        }
        (b..=e)
            .step_by(step)
            .map(|c| (c as char).to_string())
            .collect()
    };
    let mut out = Vec::new();
    for item in items {
        for rest in expand(tail)? {
            out.push(format!("{head}{item}{rest}"));
        }
    }
    Ok(out)
}

fn single_letter(s: &str) -> Option<u8> {
    match s.as_bytes() {
        [c] if c.is_ascii_alphabetic() => Some(*c),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::expand;

    #[test]
    fn ranges_expand_like_ansible() {
        let cases: &[(&str, &[&str])] = &[
            ("web", &["web"]),
            ("web[01:03]", &["web01", "web02", "web03"]),
            ("web[1:3]", &["web1", "web2", "web3"]),
            ("db-[a:c].x", &["db-a.x", "db-b.x", "db-c.x"]),
            ("n[0:6:3]", &["n0", "n3", "n6"]),
            ("r[1:2]c[a:b]", &["r1ca", "r1cb", "r2ca", "r2cb"]),
        ];
        for (name, want) in cases {
            assert_eq!(expand(name).unwrap(), *want, "{name}");
        }
        assert!(expand("web[3:1]").is_err());
        assert!(expand("web[a:3]").is_err());
        // Regression: `h[1:` became a host name; Ansible refuses it, and `web[0]`.
        for bad in ["h[1:", "web[0]", "h[1:3"] {
            assert!(expand(bad).is_err(), "{bad}");
        }
    }
}
