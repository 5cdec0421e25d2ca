//! `setup`: gather facts about a POSIX host in one command (no Python needed): OS family and
//! distribution from `/etc/os-release`, hostname and FQDN, kernel and architecture, CPUs,
//! memory, interfaces with their IPv4 addresses and the default route, package and service
//! manager, and the environment (`ansible_env`).
//!
//! Like Ansible's `setup`, the result holds `ansible_facts` with `ansible_`-prefixed keys
//! (`ansible_facts.ansible_distribution`); the executor stores them as host facts, reachable
//! both as `ansible_facts.distribution` and as the `ansible_distribution` variable.
//!
//! Local facts (`ansible_local`, from `fact_path`) are read by the same command
//! (`local_facts`).
//!
//! One file: the fact names come from one command's output, parsed in one place.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::args::list;
use super::host_path;
use super::local_facts;
use super::setup_system;
use super::{ModuleCtx, ModuleError, ModuleResult, typed_module};

typed_module!(Setup, "setup", Params, run);
typed_module!(GatherFacts, "gather_facts", GatherParams, gather_facts);

/// `gather_facts` as a task: ansible-core's action runs the fact modules of
/// `ansible_facts_modules` (`smart`: `setup` on a Linux host) with the task's arguments;
/// kinit runs its `setup` (`parallel` has nothing to do with one module).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GatherParams {
    #[serde(default, deserialize_with = "super::args::opt_boolish")]
    #[allow(dead_code)]
    parallel: Option<bool>,
    #[serde(flatten)]
    setup: Params,
}

async fn gather_facts(ctx: &ModuleCtx<'_>, p: GatherParams) -> Result<ModuleResult, ModuleError> {
    run(ctx, p.setup).await
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// Which facts to return (`all`, `min`, `network`, `hardware`, a collector name, `!`
    /// to leave one out), as ansible-core's `get_collector_names` chooses them. The one
    /// command kinit runs gathers everything; the choice filters what is returned.
    #[serde(default, deserialize_with = "list")]
    gather_subset: Vec<String>,
    /// Only return facts whose name matches one of these globs (`ansible_distribution*`).
    #[serde(default, deserialize_with = "list")]
    filter: Vec<String>,
    /// Accepted for compatibility; kinit's fact gathering has no timeout of its own.
    #[serde(default, deserialize_with = "super::args::opt_u64ish")]
    gather_timeout: Option<u64>,
    /// Where the local facts (`ansible_local`) are: `*.fact` files, JSON or INI, or
    /// programs printing either (`/etc/ansible/facts.d` by default).
    #[serde(default, deserialize_with = "host_path::opt")]
    fact_path: Option<String>,
}

const SCRIPT: &str = r#"LC_ALL=C; export LC_ALL
echo "hostname=$(hostname 2>/dev/null || cat /proc/sys/kernel/hostname)"
echo "fqdn=$(hostname -f 2>/dev/null)"
echo "kernel=$(uname -r)"
echo "kernel_version=$(uname -v)"
echo "machine=$(uname -m)"
echo "system=$(uname -s)"
echo "nproc=$(nproc 2>/dev/null || getconf _NPROCESSORS_ONLN)"
echo "user_id=$(id -un)"
echo "user_uid=$(id -u)"
echo "user_gid=$(id -g)"
echo "user_dir=$HOME"
echo "epoch=$(date +%s)"
echo "tz=$(date +%Z)"
[ -d /run/systemd/system ] && echo service_mgr=systemd
for m in apt-get dnf yum zypper apk pacman; do
  command -v $m >/dev/null 2>&1 && { echo "pkg_mgr=$m"; break; }
done
awk '/^(MemTotal|MemFree|SwapTotal|SwapFree):/ { sub(":", "", $1); print "mem_" $1 "=" $2 }' /proc/meminfo 2>/dev/null
{SYSTEM}echo '[os-release]'; cat /etc/os-release 2>/dev/null
echo '[route]'; cat /proc/net/route 2>/dev/null
echo '[route6]'; cat /proc/net/ipv6_route 2>/dev/null
echo '[ipv4]'; ip -o -4 addr show 2>/dev/null
echo '[ipv6]'; ip -o -6 addr show 2>/dev/null
echo '[mac]'; for i in $(ls -U /sys/class/net 2>/dev/null || ls /sys/class/net 2>/dev/null); do
  p=/sys/class/net/$i; [ -d $p ] || continue; echo "@$i"
  for k in address operstate mtu type flags speed; do v=$(cat $p/$k 2>/dev/null) && echo "$k=$v"; done
  [ -e $p/device ] && echo "pciid=$(readlink $p/device)"
  [ -e $p/device/driver/module ] && echo "module=$(readlink -f $p/device/driver/module)"
  [ -d $p/bridge ] && echo "bridge=$(ls -U $p/brif 2>/dev/null | tr '\n' ' ')" \
    && echo "bridge_id=$(cat $p/bridge/bridge_id 2>/dev/null)" && echo "stp_state=$(cat $p/bridge/stp_state 2>/dev/null)"
  [ -d $p/bonding ] && for k in slaves mode miimon lacp_rate primary all_slaves_active; do
    echo "bond_$k=$(cat $p/bonding/$k 2>/dev/null)"; done
  [ -d $p/bonding_slave ] && echo "perm_hwaddr=$(cat $p/bonding_slave/perm_hwaddr 2>/dev/null)"
done
echo '[env]'; env -0 | tr '\n\000' '\001\n'; echo
"#;

/// The `python` fact as ansible-core's setup module reports it
/// (module_utils/facts/system/python.py: the running interpreter's version, version_info,
/// executable, has_sslcontext and implementation name), printed as one JSON line by the
/// interpreter the host's Python modules would use, with `python_version` (the platform
/// collector's `platform.python_version()`) and `selinux_python_present` (the selinux
/// collector's: whether `libselinux.so.1` loads, which its ctypes binding needs). Part of the one gathering command.
const PYTHON: &str = r#"echo '[python]'
for p in $KINIT_PY; do command -v "$p" >/dev/null 2>&1 && { "$p" -c '
import json, sys
try:
    import ssl; ctx = hasattr(ssl, "SSLContext")
except ImportError:
    ctx = False
try:
    import ctypes; ctypes.CDLL("libselinux.so.1"); se = True
except (ImportError, OSError):
    se = False
import platform
v = sys.version_info
print(json.dumps({"version": {"major": v[0], "minor": v[1], "micro": v[2], "releaselevel": v[3], "serial": v[4]},
  "version_info": list(v), "executable": sys.executable, "has_sslcontext": ctx,
  "type": getattr(getattr(sys, "implementation", None), "name", None),
  "_python_version": platform.python_version(), "_selinux_python_present": se,
  "_fqdn": __import__("socket").getfqdn()}))' 2>/dev/null; break; }
done
"#;

/// The interpreters tried for the `python` fact, in order: `ansible_python_interpreter`
/// when set (and not `auto*`), else the usual names as interpreter discovery finds them.
fn python_candidates(vars: &crate::vars::VarMap) -> String {
    match vars.get("ansible_python_interpreter") {
        Some(Value::String(s)) if !s.starts_with("auto") => s.clone(),
        _ => "python3 /usr/bin/python3 /usr/libexec/platform-python python".into(),
    }
}

async fn run(ctx: &ModuleCtx<'_>, p: Params) -> Result<ModuleResult, ModuleError> {
    let _ = p.gather_timeout;
    let subset = match p.gather_subset.is_empty() {
        true => vec!["all".to_string()],
        false => p.gather_subset.clone(),
    };
    let collectors = collectors(&subset).map_err(|detail| ModuleError::BadArgs {
        module: "setup",
        detail,
    })?;
    let script = format!(
        "KINIT_PY={}\n{}{PYTHON}{}",
        crate::transport::quote::sh(&python_candidates(ctx.vars)),
        SCRIPT.replace("{SYSTEM}", setup_system::SCRIPT),
        local_facts::script(p.fact_path.as_deref().unwrap_or("/etc/ansible/facts.d")),
    );
    let out = ctx.run(&script).await?;
    if !out.success() {
        return Ok(ModuleResult::failed(format!(
            "fact gathering failed: {}",
            out.stderr_str().trim()
        )));
    }
    let stdout = out.stdout.as_slice();
    let mark = local_facts::MARK.as_bytes();
    let (main, local) = match stdout.windows(mark.len()).position(|w| w == mark) {
        Some(at) => (&stdout[..at], &stdout[at + mark.len()..]),
        None => (stdout, &[][..]),
    };
    let mut facts = parse(&String::from_utf8_lossy(main));
    let (local, warnings) = local_facts::parse(local);
    facts.insert("ansible_local".into(), Value::Object(local));
    let interfaces: Vec<String> = facts
        .get("ansible_interfaces")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).map(fact_name).collect())
        .unwrap_or_default();
    facts.retain(|k, _| collectors.contains(collector_of(k, &interfaces)));
    facts.insert("gather_subset".into(), json!(subset));
    facts.insert("module_setup".into(), json!(true));
    if !p.filter.is_empty() {
        // A pattern is also tried with `ansible_` before it, unless it names a prefix of its
        // own (`AnsibleFactCollector._filter`): `date_time` keeps `ansible_date_time`.
        let mut b = globset::GlobSetBuilder::new();
        for f in &p.filter {
            let prefixed = (!f.is_empty()
                && !["ansible_", "facter", "ohai"]
                    .iter()
                    .any(|x| f.starts_with(x)))
            .then(|| format!("ansible_{f}"));
            for pattern in std::iter::once(f).chain(prefixed.as_ref()) {
                b.add(
                    globset::Glob::new(pattern).map_err(|e| ModuleError::BadArgs {
                        module: "setup",
                        detail: format!("`filter` `{f}` is not a valid glob: {e}"),
                    })?,
                );
            }
        }
        let set = b.build().map_err(|e| ModuleError::BadArgs {
            module: "setup",
            detail: e.to_string(),
        })?;
        facts.retain(|k, _| set.is_match(k));
    }
    let r = ModuleResult::ok().with("ansible_facts", Value::Object(facts));
    Ok(if warnings.is_empty() {
        r
    } else {
        r.with("warnings", warnings)
    })
}

/// The facts a module result carries (`ansible_facts`), keyed the way the executor keeps
/// host facts: without the `ansible_` prefix (`distribution`), as `ansible_facts.distribution`
/// reads them; the executor adds the prefixed variables (`ansible_distribution`) itself.
pub fn host_facts(data: &Map<String, Value>) -> Option<Map<String, Value>> {
    let facts = data.get("ansible_facts")?.as_object()?;
    Some(
        facts
            .iter()
            .map(|(k, v)| {
                (
                    k.strip_prefix("ansible_").unwrap_or(k).to_string(),
                    v.clone(),
                )
            })
            .collect(),
    )
}

/// The fact collectors of each subset ansible-core names (`min` is its minimal set).
const MIN: &[&str] = &[
    "apparmor",
    "caps",
    "cmdline",
    "date_time",
    "distribution",
    "dns",
    "env",
    "fips",
    "local",
    "lsb",
    "pkg_mgr",
    "platform",
    "python",
    "selinux",
    "service_mgr",
    "ssh_pub_keys",
    "user",
];
const GROUPS: &[&str] = &[
    "hardware",
    "network",
    "virtual",
    "chroot",
    "iscsi",
    "nvme",
    "fibre_channel_wwn",
    "loadavg",
    "facter",
    "ohai",
];

/// The collectors `gather_subset` chooses, as ansible-core's `get_collector_names`: `min`
/// always, then what is added, less what is left out (unless also added by name); `!all`
/// leaves all but `min`. An unknown subset to add is an error; one to leave out is not.
fn collectors(subset: &[String]) -> Result<std::collections::HashSet<&'static str>, String> {
    use std::collections::HashSet;
    let valid: HashSet<&'static str> = MIN.iter().chain(GROUPS).copied().collect();
    let min: HashSet<&'static str> = MIN.iter().copied().collect();
    let known = |name: &str| valid.iter().copied().find(|v| *v == name);
    let (mut added, mut left_out, mut named) = (min.clone(), HashSet::new(), HashSet::new());
    for s in subset.iter().map(|s| s.trim()) {
        match s {
            "min" => added.extend(&min),
            "all" => added.extend(&valid),
            "!min" => left_out.extend(&min),
            "!all" => left_out.extend(valid.difference(&min)),
            _ => match s.strip_prefix('!') {
                Some(out) => left_out.extend(known(out)),
                None => {
                    let Some(name) = known(s) else {
                        let mut allowed: Vec<&str> = valid.iter().copied().collect();
                        allowed.sort_unstable();
                        return Err(format!(
                            "Bad subset '{s}' given to Ansible. gather_subset options allowed: \
                             all, {}",
                            allowed.join(", ")
                        ));
                    };
                    added.insert(name);
                    named.insert(name);
                }
            },
        }
    }
    let mut chosen: HashSet<&'static str> = added
        .into_iter()
        .filter(|c| !left_out.contains(c) || named.contains(c))
        .collect();
    // A collector's `required_facts` come with it, left out or not (the Linux network
    // collector needs `distribution` and `platform`, hardware `platform`).
    let requires: &[(&str, &[&'static str])] = &[
        ("network", &["distribution", "platform"]),
        ("hardware", &["platform"]),
        ("pkg_mgr", &["distribution"]),
        ("service_mgr", &["platform", "distribution"]),
    ];
    for (collector, needs) in requires {
        if chosen.contains(collector) {
            chosen.extend(needs.iter().copied());
        }
    }
    Ok(chosen)
}

/// The collector a fact (`ansible_<name>`) comes from, among those `collectors` knows.
fn collector_of(fact: &str, interfaces: &[String]) -> &'static str {
    let name = fact.strip_prefix("ansible_").unwrap_or(fact);
    match name {
        "interfaces"
        | "default_ipv4"
        | "default_ipv6"
        | "all_ipv4_addresses"
        | "all_ipv6_addresses"
        | "locally_reachable_ips" => "network",
        "iscsi_iqn" => "iscsi",
        "hostnqn" => "nvme",
        "fibre_channel_wwn" => "fibre_channel_wwn",
        "lvm" | "devices" | "device_links" => "hardware",
        n if interfaces.iter().any(|i| i == n) => "network",
        "memtotal_mb" | "memfree_mb" | "swaptotal_mb" | "swapfree_mb" | "memory_mb" | "flags"
        | "mounts" | "uptime_seconds" | "system_vendor" | "form_factor" => "hardware",
        "loadavg" => "loadavg",
        n if n.starts_with("processor")
            || n.starts_with("bios_")
            || n.starts_with("board_")
            || n.starts_with("chassis_")
            || n.starts_with("product_") =>
        {
            "hardware"
        }
        n if n.starts_with("virtualization_") => "virtual",
        n if n.starts_with("distribution") || n == "os_family" => "distribution",
        n if n.starts_with("user_") || n.ends_with("_user_id") || n.ends_with("_group_id") => {
            "user"
        }
        "cmdline" | "proc_cmdline" => "cmdline",
        "dns" => "dns",
        "lsb" => "lsb",
        "fips" => "fips",
        "apparmor" => "apparmor",
        "selinux" => "selinux",
        "system_capabilities" | "system_capabilities_enforced" => "caps",
        n if n.starts_with("ssh_host_key_") => "ssh_pub_keys",
        "is_chroot" => "chroot",
        "date_time" => "date_time",
        "env" => "env",
        "pkg_mgr" => "pkg_mgr",
        "service_mgr" => "service_mgr",
        "python" => "python",
        "selinux_python_present" => "selinux",
        "local" => "local",
        _ => "platform",
    }
}

/// An interface's fact name (`ansible_eth0`, `ansible_br_int` for `br-int`).
fn fact_name(iface: &str) -> String {
    iface.replace(['-', '.', ':'], "_")
}

/// Turn the script's output into `ansible_*` facts (pure, unit tested).
pub fn parse(text: &str) -> Map<String, Value> {
    let mut g = setup_system::Gathered::default();
    let mut section = "";
    for line in text.lines() {
        if line.starts_with('[') && line.ends_with(']') && !line.contains(' ') {
            section = &line[1..line.len() - 1];
            g.sections.entry(section).or_default();
            continue;
        }
        if section.is_empty() {
            match line.split_once('=') {
                Some(("exists", path)) => g.exists.push(path),
                Some((k, v)) => {
                    g.kv.insert(k, v);
                }
                None => {}
            }
        } else {
            g.sections.entry(section).or_default().push(line);
        }
    }
    let lines = |name: &str| g.sections.get(name).cloned().unwrap_or_default();
    let os: BTreeMap<String, String> = lines("os-release")
        .iter()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.into(), v.trim_matches('"').trim_matches('\'').into()))
        .collect();
    let (route, v4, v6, mac, route6) = (
        lines("route"),
        lines("ipv4"),
        lines("ipv6"),
        lines("mac"),
        lines("route6"),
    );
    let python: Option<Value> = lines("python")
        .first()
        .and_then(|l| serde_json::from_str(l).ok());
    // `env -0` with each variable on a line of its own (its newlines as `\x01`).
    let env: Map<String, Value> = lines("env")
        .iter()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), json!(v.replace('\x01', "\n"))))
        .collect();
    let kv: BTreeMap<String, String> =
        g.kv.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
    let get = |k: &str| kv.get(k).cloned().unwrap_or_default();
    let mb = |k: &str| {
        kv.get(k)
            .and_then(|v| v.parse::<u64>().ok())
            .map(|kb| kb / 1024)
    };
    let selinux_python = python
        .as_ref()
        .and_then(|p| p.get("_selinux_python_present"))
        .and_then(Value::as_bool);
    // What the system collectors find; the facts below are the platform's and network's.
    let system = setup_system::facts(&g, &get("machine"), selinux_python);
    let mut f = Map::new();
    let mut put = |k: &str, v: Value| {
        f.insert(format!("ansible_{k}"), v);
    };
    let hostname = get("hostname");
    // Python's `socket.getfqdn()` where the host has Python (what ansible-core reports),
    // else `hostname -f`.
    let python_fqdn = python
        .as_ref()
        .and_then(|p| p.get("_fqdn"))
        .and_then(Value::as_str)
        .map(str::to_string);
    let fqdn = python_fqdn
        .or(Some(get("fqdn")))
        .filter(|s| !s.is_empty())
        .unwrap_or(hostname.clone());
    put(
        "hostname",
        json!(hostname.split('.').next().unwrap_or_default()),
    );
    put("nodename", json!(hostname));
    put(
        "domain",
        json!(fqdn.split_once('.').map(|x| x.1).unwrap_or("")),
    );
    put("fqdn", json!(fqdn));
    put("kernel", json!(get("kernel")));
    put("kernel_version", json!(get("kernel_version")));
    put("machine", json!(get("machine")));
    put("architecture", json!(get("machine")));
    put("system", json!(get("system")));
    put(
        "processor_nproc",
        json!(get("nproc").parse::<u64>().unwrap_or(1)),
    );
    put("memtotal_mb", json!(mb("mem_MemTotal")));
    put("memfree_mb", json!(mb("mem_MemFree")));
    put("swaptotal_mb", json!(mb("mem_SwapTotal")));
    put("swapfree_mb", json!(mb("mem_SwapFree")));
    put("user_id", json!(get("user_id")));
    put("user_uid", json!(get("user_uid").parse::<u64>().ok()));
    put("user_gid", json!(get("user_gid").parse::<u64>().ok()));
    put("user_dir", json!(get("user_dir")));
    put("date_time", json!({"epoch": get("epoch"), "tz": get("tz")}));
    put("env", Value::Object(env));
    put("pkg_mgr", json!(get("pkg_mgr").trim_end_matches("-get")));
    put(
        "service_mgr",
        json!(kv.get("service_mgr").map_or("service", |s| s.as_str())),
    );
    let mut python = python.unwrap_or(Value::Null);
    if let Value::Object(m) = &mut python {
        if let Some(v) = m.remove("_python_version") {
            put("python_version", v);
        }
        if let Some(v) = m.remove("_selinux_python_present") {
            put("selinux_python_present", v);
        }
        m.remove("_fqdn");
    }
    put("python", python);

    let id = os.get("ID").cloned().unwrap_or_default();
    let like = os.get("ID_LIKE").cloned().unwrap_or_default();
    let (distribution, family) = distribution(&id, &like, os.get("NAME"));
    let mut version = os.get("VERSION_ID").cloned().unwrap_or_default();
    // Debian's point release is in /etc/debian_version (`12.11`), which ansible-core
    // reports as the version (`distro.version(best=True)`) and its minor version.
    let debian_version = get("debian_version");
    if id == "debian" {
        let point = debian_version.trim();
        if point
            .split('.')
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
        {
            version = point.to_string();
        }
        let mut parts = point.split('.');
        if let (Some(_), Some(minor)) = (parts.next(), parts.next())
            && !minor.is_empty()
            && minor.bytes().all(|b| b.is_ascii_digit())
        {
            put("distribution_minor_version", json!(minor));
        }
    }
    // The distribution file ansible-core parsed: os-release for the Debian family.
    if family == "Debian" && !os.is_empty() {
        put("distribution_file_path", json!("/etc/os-release"));
        put("distribution_file_variety", json!("Debian"));
        put("distribution_file_parsed", json!(true));
    }
    put("distribution", json!(distribution));
    put("os_family", json!(family));
    put(
        "distribution_major_version",
        json!(version.split('.').next().unwrap_or_default()),
    );
    put("distribution_version", json!(version));
    put(
        "distribution_release",
        json!(os.get("VERSION_CODENAME").cloned().unwrap_or_default()),
    );

    // Interfaces: sysfs details, IPv4/IPv6 addresses; the default route's interface.
    let mut ifaces = links(&mac);
    let mut all4 = Vec::new();
    let mut aliases = BTreeMap::<String, String>::new();
    for l in &v4 {
        // `2: eth0    inet 10.0.0.5/24 brd 10.0.0.255 scope global eth0 ...`
        let w: Vec<&str> = l.split_whitespace().collect();
        let (Some(dev), Some(cidr)) = (w.get(1), w.get(3)) else {
            continue;
        };
        let Ok(net) = cidr.parse::<ipnet::Ipv4Net>() else {
            continue;
        };
        let entry = json!({
            "address": net.addr().to_string(),
            "netmask": net.netmask().to_string(),
            "network": net.network().to_string(),
            "prefix": net.prefix_len().to_string(),
            // `brd` as `ip` shows it; none (the loopback's) is empty.
            "broadcast": w.iter().position(|x| *x == "brd").and_then(|i| w.get(i + 1)).unwrap_or(&""),
        });
        // The address's label (`eth0`, `eth0:1`): the word `ip -o` ends with `\` (its
        // line break), else the last word.
        let label = match w.iter().find(|x| x.contains('\\')) {
            Some(x) => x.split('\\').next().filter(|l| !l.is_empty()),
            None => w.last().copied(),
        };
        if let Some(label) = label {
            aliases.entry(dev.to_string()).or_insert(label.to_string());
        }
        if !net.addr().is_loopback() {
            all4.push(json!(net.addr().to_string()));
        }
        let iface = ifaces
            .entry(dev.to_string())
            .or_insert_with(|| json!({"device": dev}));
        if iface.get("ipv4").is_none() {
            iface["ipv4"] = entry;
        }
    }
    let mut all6 = Vec::new();
    for l in &v6 {
        // `4: eth0    inet6 fd00::2/64 scope global ...`
        let w: Vec<&str> = l.split_whitespace().collect();
        let (Some(dev), Some((addr, prefix))) =
            (w.get(1), w.get(3).and_then(|c| c.split_once('/')))
        else {
            continue;
        };
        if addr != "::1" {
            all6.push(json!(addr));
        }
        let scope = w
            .iter()
            .position(|x| *x == "scope")
            .and_then(|i| w.get(i + 1));
        let iface = ifaces
            .entry(dev.to_string())
            .or_insert_with(|| json!({"device": dev}));
        if !iface.get("ipv6").is_some_and(Value::is_array) {
            iface["ipv6"] = json!([]);
        }
        if let Some(list) = iface["ipv6"].as_array_mut() {
            list.push(json!({"address": addr, "prefix": prefix, "scope": scope.unwrap_or(&"")}));
        }
    }
    let default6 = default_ipv6(&route6, &ifaces);
    let mut default4 = json!({});
    for l in route.iter().skip(1) {
        let w: Vec<&str> = l.split_whitespace().collect();
        if w.get(1) == Some(&"00000000")
            && let (Some(dev), Some(gw)) = (w.first(), w.get(2))
        {
            let gw = u32::from_str_radix(gw, 16).unwrap_or(0).to_le_bytes();
            let mut d = ifaces
                .get(*dev)
                .and_then(|i| i.get("ipv4").cloned())
                .unwrap_or_else(|| json!({}));
            d["interface"] = json!(dev);
            d["gateway"] = json!(std::net::Ipv4Addr::from(gw).to_string());
            link_details(&mut d, ifaces.get(*dev));
            if let Some(alias) = aliases.get(*dev) {
                d["alias"] = json!(alias);
            }
            default4 = d;
            break;
        }
    }
    put(
        "interfaces",
        json!(ifaces.keys().cloned().collect::<Vec<_>>()),
    );
    for (name, v) in ifaces {
        put(&fact_name(&name), v);
    }
    put("all_ipv4_addresses", json!(all4));
    put("all_ipv6_addresses", json!(all6));
    put("default_ipv4", default4);
    put("default_ipv6", default6);
    f.extend(system);
    f
}

/// Each interface's sysfs details as ansible-core's Linux network collector reads them
/// (module_utils/facts/network/linux.py `get_interfaces_info`), from the gathering's `[mac]`
/// section: an `@name` line, then `file=value` lines. Interfaces keep the directory's order;
/// ansible-core's `interfaces` list comes out in a different order on each run (the module's
/// result turns the keys into a set), so no playbook can rely on one.
fn links(lines: &[&str]) -> Map<String, Value> {
    let mut ifaces = Map::new();
    let mut current: Option<&mut Value> = None;
    for l in lines {
        if let Some(name) = l.strip_prefix('@') {
            current = Some(
                ifaces
                    .entry(name.to_string())
                    .or_insert_with(|| json!({"device": name})),
            );
            continue;
        }
        let (Some(iface), Some((k, v))) = (current.as_deref_mut(), l.split_once('=')) else {
            continue;
        };
        let first = || v.split_whitespace().next().unwrap_or_default();
        let base = || v.rsplit('/').next().unwrap_or_default();
        match k {
            "address" if !v.is_empty() && v != "00:00:00:00:00:00" => {
                iface["macaddress"] = json!(v);
            }
            "operstate" => iface["active"] = json!(v != "down"),
            "mtu" | "speed" => {
                if let Ok(n) = v.trim().parse::<i64>() {
                    iface[k] = json!(n);
                }
            }
            // A bridge or bond keeps its kind whatever the link type says.
            "type" if iface.get("type").is_none() => {
                iface["type"] = json!(match v {
                    "1" => "ether",
                    "32" => "infiniband",
                    "512" => "ppp",
                    "772" => "loopback",
                    "65534" => "tunnel",
                    _ => "unknown",
                });
            }
            "flags" => {
                if let Ok(flags) = u64::from_str_radix(v.trim_start_matches("0x"), 16) {
                    iface["promisc"] = json!(flags & 0x100 != 0);
                }
            }
            "pciid" => iface["pciid"] = json!(base()),
            "module" => iface["module"] = json!(base()),
            "bridge" => {
                iface["type"] = json!("bridge");
                iface["interfaces"] = json!(v.split_whitespace().collect::<Vec<_>>());
            }
            "bridge_id" => iface["id"] = json!(v),
            "stp_state" => iface["stp"] = json!(v == "1"),
            "bond_slaves" => {
                iface["type"] = json!("bonding");
                iface["slaves"] = json!(v.split_whitespace().collect::<Vec<_>>());
            }
            "bond_mode" | "bond_miimon" | "bond_lacp_rate" => {
                iface[&k[5..]] = json!(first());
            }
            "bond_primary" if !v.is_empty() => iface["primary"] = json!(v),
            "bond_all_slaves_active" if iface.get("primary").is_some() => {
                iface["all_slaves_active"] = json!(v == "1");
            }
            "perm_hwaddr" => iface["perm_macaddress"] = json!(v),
            _ => {}
        }
    }
    ifaces
}

/// `default_ipv6`: the IPv6 default route with the lowest metric (`/proc/net/ipv6_route`:
/// destination `::/0` through a gateway), with its interface's first global address, as
/// ansible-core's network facts give it; `{}` without one.
fn default_ipv6(routes: &[&str], ifaces: &Map<String, Value>) -> Value {
    let best = routes
        .iter()
        .filter_map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            let zero = "0".repeat(32);
            (w.len() >= 10 && w[0] == zero && w[1] == "00" && w[4] != zero).then(|| {
                let metric = u32::from_str_radix(w[5], 16).unwrap_or(u32::MAX);
                (metric, w[4], w[9])
            })
        })
        .min_by_key(|(metric, _, _)| *metric);
    let Some((_, hop, dev)) = best else {
        return json!({});
    };
    let Ok(bits) = u128::from_str_radix(hop, 16) else {
        return json!({});
    };
    let iface = ifaces.get(dev);
    let global = iface
        .and_then(|i| i.get("ipv6"))
        .and_then(Value::as_array)
        .and_then(|a| a.iter().find(|x| x["scope"] == "global"));
    let mut d = global.cloned().unwrap_or_else(|| json!({}));
    d["gateway"] = json!(std::net::Ipv6Addr::from(bits).to_string());
    d["interface"] = json!(dev);
    link_details(&mut d, iface);
    d
}

/// A default route's interface details: its MAC address, MTU and type (`unknown` when
/// sysfs did not say).
fn link_details(d: &mut Value, iface: Option<&Value>) {
    if let Some(m) = iface.and_then(|i| i.get("macaddress")) {
        d["macaddress"] = m.clone();
    }
    if let Some(mtu) = iface.and_then(|i| i.get("mtu")) {
        d["mtu"] = mtu.clone();
    }
    d["type"] = iface
        .and_then(|i| i.get("type"))
        .cloned()
        .unwrap_or(json!("unknown"));
}

/// Ansible's `distribution` and `os_family` for an os-release `ID`/`ID_LIKE`.
fn distribution(id: &str, like: &str, name: Option<&String>) -> (String, String) {
    let dist = match id {
        "debian" => "Debian",
        "ubuntu" => "Ubuntu",
        "centos" => "CentOS",
        "rhel" => "RedHat",
        "fedora" => "Fedora",
        "rocky" => "Rocky",
        "almalinux" => "AlmaLinux",
        "ol" => "OracleLinux",
        "amzn" => "Amazon",
        "opensuse-leap" | "opensuse-tumbleweed" | "opensuse" => "openSUSE Leap",
        "sles" => "SLES",
        "alpine" => "Alpine",
        "arch" => "Archlinux",
        "" => return ("Unknown".into(), "Unknown".into()),
        other => {
            return (
                name.cloned().unwrap_or_else(|| other.to_string()),
                family(like),
            );
        }
    };
    let fam = match id {
        "debian" | "ubuntu" => "Debian",
        "alpine" => "Alpine",
        "arch" => "Archlinux",
        "opensuse-leap" | "opensuse-tumbleweed" | "opensuse" | "sles" => "Suse",
        _ => "RedHat",
    };
    (dist.into(), fam.into())
}

fn family(like: &str) -> String {
    let words: Vec<&str> = like.split_whitespace().collect();
    let has = |w: &str| words.contains(&w);
    if has("debian") || has("ubuntu") {
        "Debian"
    } else if has("rhel") || has("fedora") || has("centos") {
        "RedHat"
    } else if has("suse") {
        "Suse"
    } else {
        "Unknown"
    }
    .into()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chosen(subset: &[&str]) -> Vec<&'static str> {
        let subset: Vec<String> = subset.iter().map(|s| s.to_string()).collect();
        let mut c: Vec<&str> = collectors(&subset).unwrap().into_iter().collect();
        c.sort_unstable();
        c
    }

    /// ansible-core's `get_collector_names` on the subsets kubespray and roles ask for.
    #[test]
    fn gather_subset_chooses_collectors_as_ansible_core() {
        assert!(chosen(&["all"]).contains(&"network"));
        let min = chosen(&["!all"]);
        assert!(
            min.contains(&"distribution") && !min.contains(&"network"),
            "{min:?}"
        );
        // The network collector brings the facts it requires.
        assert_eq!(
            chosen(&["!all", "!min", "network"]),
            ["distribution", "network", "platform"]
        );
        assert_eq!(
            chosen(&["!all", "!min", "hardware"]),
            ["hardware", "platform"]
        );
        assert_eq!(chosen(&["!all", "!min", "distribution"]), ["distribution"]);
        let no_hw = chosen(&["all", "!hardware"]);
        assert!(!no_hw.contains(&"hardware") && no_hw.contains(&"network"));
        let err = collectors(&["netwrk".to_string()]).unwrap_err();
        assert!(
            err.starts_with("Bad subset 'netwrk' given to Ansible."),
            "{err}"
        );
        // Leaving out an unknown subset is no error.
        assert!(collectors(&["!nothing".to_string()]).is_ok());
    }

    #[test]
    fn the_ipv6_default_route_with_the_lowest_metric_is_default_ipv6() {
        let zero = "0".repeat(32);
        let routes = [
            format!("fd000000000000000000000000000000 40 {zero} 00 {zero} 00000100 1 0 1 eth0"),
            format!("{zero} 00 {zero} 00 fd000000000000000000000000000009 00000800 3 0 3 eth1"),
            format!("{zero} 00 {zero} 00 fd000000000000000000000000000001 00000400 3 0 3 eth0"),
        ];
        let routes: Vec<&str> = routes.iter().map(String::as_str).collect();
        let mut ifaces = Map::new();
        ifaces.insert(
            "eth0".into(),
            json!({"macaddress": "02:00:00:00:00:01", "ipv6": [
                {"address": "fe80::1", "prefix": "64", "scope": "link"},
                {"address": "fd00::2", "prefix": "64", "scope": "global"}]}),
        );
        let d = default_ipv6(&routes, &ifaces);
        assert_eq!(d["gateway"], "fd00::1");
        assert_eq!(d["interface"], "eth0");
        assert_eq!(d["address"], "fd00::2");
        assert_eq!(d["macaddress"], "02:00:00:00:00:01");
        assert_eq!(default_ipv6(&routes[..1], &ifaces), json!({}));
    }

    #[test]
    fn interfaces_read_as_the_linux_collector_reads_sysfs() {
        let lines: Vec<&str> = "@br0\naddress=52:54:00:00:00:01\noperstate=down\nmtu=1500\n\
            type=1\nflags=0x1103\nbridge=veth1 veth0 \nbridge_id=8000.525400000001\nstp_state=0\n\
            @eth0\naddress=52:54:00:aa:bb:cc\noperstate=up\nmtu=9000\ntype=1\nflags=0x1003\n\
            speed=-1\npciid=../../../virtio2\nmodule=../../../../module/virtio_net\n\
            @bond0\naddress=00:00:00:00:00:00\ntype=1\nbond_slaves=eth1 eth2\n\
            bond_mode=802.3ad 4\nbond_miimon=100\nbond_lacp_rate=fast 1\nbond_primary=eth1\n\
            bond_all_slaves_active=0\n@lo\ntype=772\nspeed=garbage"
            .lines()
            .collect();
        let i = links(&lines);
        assert_eq!(
            i.keys().collect::<Vec<_>>(),
            ["br0", "eth0", "bond0", "lo"],
            "sysfs order, not sorted"
        );
        assert_eq!(
            i["br0"],
            json!({"device": "br0", "macaddress": "52:54:00:00:00:01", "active": false,
                "mtu": 1500, "type": "bridge", "promisc": true, "interfaces": ["veth1", "veth0"],
                "id": "8000.525400000001", "stp": false})
        );
        assert_eq!(i["eth0"]["speed"], -1);
        assert_eq!(i["eth0"]["pciid"], "virtio2");
        assert_eq!(i["eth0"]["module"], "virtio_net");
        assert_eq!(i["eth0"]["promisc"], false);
        assert_eq!(i["bond0"]["type"], "bonding");
        assert_eq!(i["bond0"]["slaves"], json!(["eth1", "eth2"]));
        assert_eq!(i["bond0"]["mode"], "802.3ad");
        assert_eq!(i["bond0"]["lacp_rate"], "fast");
        assert_eq!(i["bond0"]["all_slaves_active"], false);
        assert!(i["bond0"].get("macaddress").is_none());
        assert_eq!(i["lo"], json!({"device": "lo", "type": "loopback"}));
    }

    #[test]
    fn parses_a_rocky_host() {
        let text = "hostname=node1\nfqdn=node1.k8s.local\nmachine=x86_64\nnproc=4\n\
            mem_MemTotal=8046932\npkg_mgr=dnf\nservice_mgr=systemd\n[os-release]\n\
            ID=\"rocky\"\nID_LIKE=\"rhel centos fedora\"\nVERSION_ID=\"9.3\"\n[route]\n\
            Iface\tDestination\tGateway\neth0\t00000000\tFE00000A\t0003\neth0\t0000000A\t00000000\n\
            [ipv4]\n1: lo    inet 127.0.0.1/8 scope host lo\n\
            2: eth0    inet 10.0.0.1/24 brd 10.0.0.255 scope global eth0\n\
            [mac]\n@eth0\naddress=52:54:00:aa:bb:cc\noperstate=up\n@lo\naddress=00:00:00:00:00:00\n\
            operstate=unknown\n";
        let f = parse(text);
        assert_eq!(f["ansible_distribution"], "Rocky");
        assert_eq!(f["ansible_os_family"], "RedHat");
        assert_eq!(f["ansible_distribution_major_version"], "9");
        assert_eq!(f["ansible_fqdn"], "node1.k8s.local");
        assert_eq!(f["ansible_domain"], "k8s.local");
        assert_eq!(f["ansible_memtotal_mb"], 7858);
        assert_eq!(f["ansible_pkg_mgr"], "dnf");
        assert_eq!(f["ansible_default_ipv4"]["address"], "10.0.0.1");
        assert_eq!(f["ansible_default_ipv4"]["gateway"], "10.0.0.254");
        assert_eq!(f["ansible_default_ipv4"]["macaddress"], "52:54:00:aa:bb:cc");
        assert_eq!(f["ansible_all_ipv4_addresses"], json!(["10.0.0.1"]));
        assert_eq!(f["ansible_eth0"]["ipv4"]["netmask"], "255.255.255.0");
        let mut data = Map::new();
        data.insert("ansible_facts".into(), Value::Object(f));
        let host = host_facts(&data).unwrap();
        assert_eq!(host["distribution"], "Rocky");
        assert!(host.keys().all(|k| !k.starts_with("ansible_")));
    }
}
