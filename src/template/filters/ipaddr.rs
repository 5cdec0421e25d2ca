//! Address math in the style of `ansible.utils` (`ipaddr`, `ipv4`, `ipv6`, `nthhost`,
//! `ipmath`, `network_in_usable`, `next_nth_usable`, ...), on `ipnet`. Like the Python
//! originals they answer `false` for input that is not an address of the wanted kind.
//!
//! One file: every filter here is a thin query over the same `Iface` (address plus prefix) and
//! its arithmetic.

use std::net::IpAddr;

use ipnet::IpNet;
use minijinja::value::ValueKind;
use minijinja::{Error, ErrorKind, Value};

use crate::template::pyrepr;

/// An address with its prefix (`10.0.0.5/24`); a bare address has the full prefix.
#[derive(Clone, Copy)]
struct Iface {
    ip: IpAddr,
    net: IpNet,
}

fn parse(text: &str) -> Option<Iface> {
    let t = text.trim();
    if let Ok(net) = t.parse::<IpNet>() {
        return Some(Iface {
            ip: net.addr(),
            net,
        });
    }
    let ip: IpAddr = t.parse().ok()?;
    Some(Iface {
        ip,
        net: IpNet::from(ip),
    })
}

fn bits(ip: IpAddr) -> u32 {
    if ip.is_ipv4() { 32 } else { 128 }
}

fn to_u128(ip: IpAddr) -> u128 {
    match ip {
        IpAddr::V4(a) => u128::from(u32::from(a)),
        IpAddr::V6(a) => u128::from(a),
    }
}

fn from_u128(n: u128, v4: bool) -> Option<IpAddr> {
    if v4 {
        u32::try_from(n).ok().map(|n| IpAddr::V4(n.into()))
    } else {
        Some(IpAddr::V6(n.into()))
    }
}

impl Iface {
    fn size(&self) -> u128 {
        let host_bits = bits(self.ip) - u32::from(self.net.prefix_len());
        if host_bits >= 128 {
            u128::MAX
        } else {
            1u128 << host_bits
        }
    }
    fn network(&self) -> IpAddr {
        self.net.network()
    }
    fn prefix(&self) -> u8 {
        self.net.prefix_len()
    }
    /// The `n`-th address of the network (negative counts from the end).
    fn nth(&self, n: i128) -> Option<IpAddr> {
        let size = self.size();
        let idx = if n < 0 {
            size.checked_sub(n.unsigned_abs())?
        } else {
            n as u128
        };
        if idx >= size {
            return None;
        }
        from_u128(to_u128(self.network()) + idx, self.ip.is_ipv4())
    }
    fn offset(&self, by: i128) -> Option<IpAddr> {
        let base = to_u128(self.ip);
        let n = if by < 0 {
            base.checked_sub(by.unsigned_abs())?
        } else {
            base.checked_add(by as u128)?
        };
        from_u128(n, self.ip.is_ipv4())
    }
    fn usable(&self) -> Option<(IpAddr, IpAddr)> {
        let size = self.size();
        let (first, last) = if size <= 2 {
            (0, size - 1)
        } else if self.ip.is_ipv4() {
            (1, size - 2)
        } else {
            (1, size - 1)
        };
        Some((self.nth(first as i128)?, self.nth(last as i128)?))
    }
}

fn falsy() -> Value {
    Value::from(false)
}

/// One `ipaddr` query against one address.
fn query(i: Iface, q: &str) -> Result<Value, Error> {
    let s = |x: String| Value::from(x);
    Ok(match q {
        "" => return Ok(Value::from(i.net.to_string())),
        "address" | "ip" => {
            if i.size() == 1 || i.ip != i.network() {
                s(i.ip.to_string())
            } else {
                falsy()
            }
        }
        "host" => {
            if i.size() == 1 || i.ip != i.network() {
                s(format!("{}/{}", i.ip, i.prefix()))
            } else {
                falsy()
            }
        }
        "address/prefix" | "host/prefix" => {
            if i.size() > 1 && i.ip != i.network() {
                s(format!("{}/{}", i.ip, i.prefix()))
            } else {
                falsy()
            }
        }
        "network" => s(i.network().to_string()),
        "net" => {
            if i.size() > 1 && i.ip == i.network() {
                s(format!("{}/{}", i.network(), i.prefix()))
            } else {
                falsy()
            }
        }
        "subnet" | "cidr" | "network/prefix" => s(format!("{}/{}", i.network(), i.prefix())),
        "prefix" => Value::from(i.prefix()),
        "netmask" => s(i.net.netmask().to_string()),
        "hostmask" => s(i.net.hostmask().to_string()),
        "broadcast" => {
            if i.ip.is_ipv4() && i.size() > 2 {
                s(i.net.broadcast().to_string())
            } else {
                falsy()
            }
        }
        "size" => Value::from(i.size() as u64),
        "version" => Value::from(if i.ip.is_ipv4() { 4 } else { 6 }),
        "int" => Value::from(to_u128(i.ip) as u64),
        "first_usable" => i.usable().map_or(falsy(), |(f, _)| s(f.to_string())),
        "last_usable" => i.usable().map_or(falsy(), |(_, l)| s(l.to_string())),
        "range_usable" => i.usable().map_or(falsy(), |(f, l)| s(format!("{f}-{l}"))),
        "wrap" | "ipwrap" => match i.ip {
            IpAddr::V6(_) if i.size() == 1 => s(format!("[{}]", i.ip)),
            IpAddr::V6(_) => s(format!("[{}]/{}", i.ip, i.prefix())),
            IpAddr::V4(_) => s(if i.size() == 1 {
                i.ip.to_string()
            } else {
                i.net.to_string()
            }),
        },
        "private" => bool_value(is_private(i.ip)),
        "public" => bool_value(!is_private(i.ip) && !i.ip.is_loopback()),
        "loopback" => bool_value(i.ip.is_loopback()),
        "multicast" => bool_value(i.ip.is_multicast()),
        "unicast" => bool_value(!i.ip.is_multicast()),
        "ipv4" | "4" if i.ip.is_ipv4() => s(i.net.to_string()),
        "ipv6" | "6" if i.ip.is_ipv6() => s(i.net.to_string()),
        "ipv4" | "4" | "ipv6" | "6" => falsy(),
        q if q.parse::<i128>().is_ok() => {
            let n: i128 = q.parse().unwrap_or(0);
            i.nth(n)
                .map_or(falsy(), |a| s(format!("{a}/{}", i.prefix())))
        }
        other => {
            return Err(Error::new(
                ErrorKind::InvalidOperation,
                format!("ipaddr: unknown query `{other}`"),
            ));
        }
    })
}

fn bool_value(b: bool) -> Value {
    Value::from(b)
}

fn is_private(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(a) => {
            a.is_private()
                || a.is_link_local()
                || a.octets()[0] == 100 && (a.octets()[1] & 0xc0) == 64
        }
        IpAddr::V6(a) => {
            (a.segments()[0] & 0xfe00) == 0xfc00 || (a.segments()[0] & 0xffc0) == 0xfe80
        }
    }
}

/// Apply a query to a value or, for a list, to each item, keeping the answers that are not
/// `false` (as `ansible.utils.ipaddr` does).
fn apply(value: &Value, q: &str, version: Option<u8>) -> Result<Value, Error> {
    if matches!(value.kind(), ValueKind::Seq | ValueKind::Iterable) {
        let mut out = Vec::new();
        for item in value.try_iter()? {
            let r = apply(&item, q, version)?;
            if !matches!(r.kind(), ValueKind::Bool | ValueKind::None) || r.is_true() {
                out.push(r);
            }
        }
        return Ok(Value::from(out));
    }
    let text = pyrepr::to_str(value)?;
    let Some(i) = parse(&text) else {
        return Ok(falsy());
    };
    match version {
        Some(4) if !i.ip.is_ipv4() => return Ok(falsy()),
        Some(6) if !i.ip.is_ipv6() => return Ok(falsy()),
        _ => {}
    }
    if q.is_empty() {
        // A valid address comes back as given.
        return Ok(Value::from(text));
    }
    // A query that is no query name but an address or network asks whether the value lies
    // within it (ansible.utils' `_cidr_lookup_query`: the value itself, else `None`).
    if let Some(within) = parse(q).filter(|_| q.parse::<i128>().is_err()) {
        let inside = within.net.trunc().contains(&i.net.trunc());
        return Ok(if inside {
            Value::from(text)
        } else {
            Value::from(())
        });
    }
    query(i, q)
}

fn query_text(q: Option<Value>) -> Result<String, Error> {
    match q {
        None => Ok(String::new()),
        Some(v) => pyrepr::to_str(&v),
    }
}

pub fn ipaddr(value: Value, q: Option<Value>) -> Result<Value, Error> {
    apply(&value, &query_text(q)?, None)
}

pub fn ipv4(value: Value, q: Option<Value>) -> Result<Value, Error> {
    apply(&value, &query_text(q)?, Some(4))
}

pub fn ipv6(value: Value, q: Option<Value>) -> Result<Value, Error> {
    apply(&value, &query_text(q)?, Some(6))
}

/// `'10.0.0.0/24' | nthhost(5)` → `10.0.0.5`.
pub fn nthhost(value: Value, n: i64) -> Result<Value, Error> {
    let Some(i) = parse(&pyrepr::to_str(&value)?) else {
        return Ok(falsy());
    };
    Ok(i.nth(i128::from(n))
        .map_or(falsy(), |a| Value::from(a.to_string())))
}

/// `'10.0.0.5' | ipmath(3)` → `10.0.0.8`.
pub fn ipmath(value: Value, by: i64) -> Result<Value, Error> {
    let text = pyrepr::to_str(&value)?;
    let Some(i) = parse(&text) else {
        return Err(Error::new(
            ErrorKind::InvalidOperation,
            format!("ipmath: `{text}` is not an IP address"),
        ));
    };
    i.offset(i128::from(by))
        .map(|a| Value::from(a.to_string()))
        .ok_or_else(|| {
            Error::new(
                ErrorKind::InvalidOperation,
                format!("ipmath: `{text}` + {by} leaves the address space"),
            )
        })
}

/// `'10.0.0.0/24' | next_nth_usable('10.0.0.1'..)`: the address `n` after the given one,
/// if it is usable in the network.
pub fn next_nth_usable(value: Value, n: i64) -> Result<Value, Error> {
    let Some(i) = parse(&pyrepr::to_str(&value)?) else {
        return Ok(falsy());
    };
    let Some((first, last)) = i.usable() else {
        return Ok(falsy());
    };
    let Some(a) = i.offset(i128::from(n)) else {
        return Ok(falsy());
    };
    if to_u128(a) < to_u128(first) || to_u128(a) > to_u128(last) {
        return Ok(falsy());
    }
    Ok(Value::from(a.to_string()))
}

pub fn previous_nth_usable(value: Value, n: i64) -> Result<Value, Error> {
    next_nth_usable(value, -n)
}

/// `'10.0.0.0/24' | network_in_usable('10.0.0.7')`.
pub fn network_in_usable(value: Value, test: Value) -> Result<bool, Error> {
    let (Some(net), Some(t)) = (
        parse(&pyrepr::to_str(&value)?),
        parse(&pyrepr::to_str(&test)?),
    ) else {
        return Ok(false);
    };
    let Some((first, last)) = net.usable() else {
        return Ok(false);
    };
    let x = to_u128(t.ip);
    Ok(net.ip.is_ipv4() == t.ip.is_ipv4() && x >= to_u128(first) && x <= to_u128(last))
}

/// `'10.0.0.0/24' | network_in_network('10.0.0.0/25')`.
pub fn network_in_network(value: Value, test: Value) -> Result<bool, Error> {
    let (Some(net), Some(t)) = (
        parse(&pyrepr::to_str(&value)?),
        parse(&pyrepr::to_str(&test)?),
    ) else {
        return Ok(false);
    };
    Ok(net.net.trunc().contains(&t.net.trunc()))
}

/// `'10.0.0.0/16' | ipsubnet(24, 2)`: the `index`-th subnet of that size (or how many
/// there are without an index).
pub fn ipsubnet(value: Value, prefix: u8, index: Option<i64>) -> Result<Value, Error> {
    let Some(i) = parse(&pyrepr::to_str(&value)?) else {
        return Ok(falsy());
    };
    let Ok(subnets) = i.net.trunc().subnets(prefix) else {
        return Ok(falsy());
    };
    match index {
        None => Ok(Value::from(subnets.count() as u64)),
        Some(idx) => {
            let all: Vec<IpNet> = subnets.collect();
            let pos = if idx < 0 {
                all.len().checked_sub(idx.unsigned_abs() as usize)
            } else {
                usize::try_from(idx).ok()
            };
            Ok(pos
                .and_then(|p| all.get(p))
                .map_or(falsy(), |n| Value::from(n.to_string())))
        }
    }
}
