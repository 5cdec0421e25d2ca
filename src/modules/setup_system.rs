//! `setup`'s facts beyond the platform and network ones: the shell that gathers them
//! ([`SCRIPT`], part of `setup`'s one command) and pure functions turning its sections into
//! facts, each shaped as ansible-core 2.19's Linux collector returns it (module_utils/facts:
//! `system/date_time.py`, `user.py`, `cmdline.py`, `dns.py`, `lsb.py`, `fips.py`,
//! `apparmor.py`, `selinux.py`, `caps.py`, `ssh_pub_keys.py`, `service_mgr.py`,
//! `chroot.py`, `platform.py`, `hardware/linux.py` (memory, CPUs, mounts, DMI, uptime),
//! `virtual/linux.py`).
//!
//! Not gathered: DMI through `dmidecode` (a host without `/sys/devices/virtual/dmi` reports
//! `NA`, as ansible-core does without `dmidecode`) and a disk's serial through `sg_inq` (read
//! from sysfs).

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

/// The shell that prints what these facts come from: `key=value` lines, then sections.
pub(super) const SCRIPT: &str = r#"e=$(date +%s.%N)
echo "dt_local=$(date -d "@$e" +'%Y|%m|%A|%w|%W|%d|%H|%M|%S|%s|%N|%Z|%z')"
echo "dt_utc=$(date -u -d "@$e" +'%Y-%m-%dT%H:%M:%S|%N')"
y=$(date +%Y)
echo "dt_jan=$(date -d "$y-01-01 12:00" +'%Z|%z')"
echo "dt_jul=$(date -d "$y-07-01 12:00" +'%Z|%z')"
echo "passwd=$(getent passwd "$(id -un)" 2>/dev/null)"
echo "real_uid=$(id -ru)"
echo "real_gid=$(id -rg)"
echo "proc_1=$(cat /proc/1/comm 2>/dev/null)"
[ -L /sbin/init ] && echo "sbin_init=$(readlink /sbin/init)"
command -v systemctl >/dev/null 2>&1 && echo has_systemctl=1
command -v initctl >/dev/null 2>&1 && echo has_initctl=1
for f in /run/systemd/system/ /dev/.run/systemd/ /dev/.systemd/ /etc/init/ /sbin/openrc \
  /etc/init.d/ /etc/dinit.d/ /proc/vz /proc/lve /proc/bc /.dockerenv /.dockerinit /proc/xen \
  /dev/kvm /sys/kernel/security/apparmor /sys/fs/selinux/enforce \
  /sys/devices/virtual/dmi/id/product_name; do
  [ -e "$f" ] && echo "exists=$f"
done
echo "fips=$(cat /proc/sys/crypto/fips_enabled 2>/dev/null)"
echo "uptime=$(cut -d' ' -f1 /proc/uptime 2>/dev/null)"
echo "loadavg=$(cat /proc/loadavg 2>/dev/null)"
echo "machine_id=$(head -n1 /var/lib/dbus/machine-id 2>/dev/null || head -n1 /etc/machine-id 2>/dev/null)"
echo "systemd_container=$(cat /run/systemd/container 2>/dev/null)"
echo "xen_caps=$(cat /proc/xen/capabilities 2>/dev/null)"
echo "debian_chroot=${debian_chroot:-}"
echo "root_stat=$(stat -c '%d:%i' / 2>/dev/null) $(stat -c '%d:%i' /proc/1/root/. 2>/dev/null)"
echo "root_fs=$(stat -f -c %T / 2>/dev/null)"
echo "long_bit=$(getconf LONG_BIT 2>/dev/null)"
echo "debian_version=$(cat /etc/debian_version 2>/dev/null)"
echo "selinux_policyvers=$(cat /sys/fs/selinux/policyvers 2>/dev/null)"
echo "selinux_enforce=$(cat /sys/fs/selinux/enforce 2>/dev/null)"
echo "selinux_config=$(grep -E '^SELINUX(TYPE)?=' /etc/selinux/config 2>/dev/null | tr '\n' ' ')"
if command -v capsh >/dev/null 2>&1; then
  c=$(capsh --print 2>/dev/null) && echo "caps=$(printf '%s\n' "$c" | grep '^Current:')"
fi
echo '[cpuinfo]'; cat /proc/cpuinfo 2>/dev/null
echo '[meminfo]'; cat /proc/meminfo 2>/dev/null
echo '[cmdline]'; cat /proc/cmdline 2>/dev/null
echo '[resolv]'; cat /etc/resolv.conf 2>/dev/null
echo '[lsb]'; { lsb_release -a 2>/dev/null && echo 'lsb_release=1'; } || cat /etc/lsb-release 2>/dev/null
echo '[dmi]'; for f in bios_date bios_vendor bios_version board_asset_tag board_name \
  board_serial board_vendor board_version chassis_asset_tag chassis_serial chassis_vendor \
  chassis_version chassis_type product_name product_serial product_uuid product_version \
  product_family sys_vendor; do
  v=$(cat /sys/devices/virtual/dmi/id/$f 2>/dev/null) && echo "$f=$v"
done
echo '[modules]'; cut -d' ' -f1 /proc/modules 2>/dev/null
echo '[cgroup1]'; cat /proc/1/cgroup 2>/dev/null
echo '[environ1]'; tr '\000' '\n' 2>/dev/null </proc/1/environ | grep '^container='
echo '[sshkeys]'; for d in /etc/ssh /etc/openssh /etc; do for t in dsa rsa ecdsa ed25519; do
  [ -r "$d/ssh_host_${t}_key.pub" ] && echo "$t $(cat "$d/ssh_host_${t}_key.pub")"
done; done
echo '[mounts]'; cat /etc/mtab 2>/dev/null || cat /proc/mounts 2>/dev/null
echo '[statfs]'; { cat /etc/mtab 2>/dev/null || cat /proc/mounts; } | while read -r dev mnt fs rest; do
  case "$dev" in /*|\\*|*:/*) ;; *) continue ;; esac
  [ "$fs" = none ] && continue
  printf '%s\t%s\n' "$mnt" "$(stat -f -c '%S %s %b %a %c %d' "$(printf '%b' "$mnt")" 2>/dev/null)"
done
echo '[lsblk]'; lsblk -ln --paths --output NAME,UUID --exclude 2 2>/dev/null
echo '[disk_links]'; for t in id uuid label; do for l in /dev/disk/by-$t/*; do
  [ -L "$l" ] && printf '%s\t%s\t%s\n' "$t" "${l##*/}" "$(basename "$(readlink "$l")")"
done; done
echo '[slaves]'; for s in /sys/block/*/slaves/*; do
  [ -e "$s" ] && { x=${s#/sys/block/}; printf '%s\t%s\n' "${x%%/*}" "${s##*/}"; }
done
echo '[lspci]'; lspci -D 2>/dev/null
echo '[blockdevs]'; for b in /sys/block/*; do
  [ -e "$b" ] || continue
  n=${b##*/}; l=$(readlink "$b") || l=
  if [ -n "$l" ]; then d="/sys/block/$l"; v=1; else d=$b; v=1; ls "$b" | grep -q device && v=0; fi
  r() { x=$(cat "$1" 2>/dev/null) && printf '%s' "$x" | tr '\t\n' '  ' || printf '\001'; }
  printf 'dev\t%s\t%s\t%s' "$n" "$d" "$v"
  for f in device/vendor device/model device/sas_address device/sas_device_handle device/serial \
    removable queue/discard_max_hw_bytes queue/discard_granularity queue/rotational \
    queue/scheduler queue/logical_block_size queue/hw_sector_size size; do printf '\t%s' "$(r "$d/$f")"; done
  echo
  for h in "$d"/holders/dm-*; do [ -e "$h" ] && printf 'holder\t%s\t%s\t%s\n' "$n" "${h##*/}" "$(r "$h/dm/name")"; done
  for p in "$d/$n"*; do
    [ -d "$p" ] || continue
    pn=${p##*/}
    printf 'part\t%s\t%s' "$n" "$pn"
    for f in start queue/logical_block_size queue/hw_sector_size size; do printf '\t%s' "$(r "$p/$f")"; done
    echo
    for h in "$p"/holders/dm-*; do [ -e "$h" ] && printf 'pholder\t%s\t%s\t%s\n' "$pn" "${h##*/}" "$(r "$h/dm/name")"; done
  done
done
echo '[iscsi]'; cat /etc/iscsi/initiatorname.iscsi 2>/dev/null
echo '[nvme]'; cat /etc/nvme/hostnqn 2>/dev/null
echo '[fc_wwn]'; cat /sys/class/fc_host/*/port_name 2>/dev/null
echo '[local_routes]'; ip -4 route show table local 2>/dev/null; ip -6 route show table local 2>/dev/null
if command -v vgs >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
  o='--noheadings --nosuffix --units g --separator ,'
  echo '[vgs]'; vgs $o 2>/dev/null
  echo '[lvs]'; command -v lvs >/dev/null 2>&1 && lvs $o 2>/dev/null
  echo '[pvs]'; command -v pvs >/dev/null 2>&1 && pvs $o 2>/dev/null
fi
echo '[findmnt]'; findmnt -lnuo TARGET,SOURCE 2>/dev/null
"#;

/// What [`SCRIPT`] printed: its `key=value` lines (`exists` collected) and its sections.
#[derive(Debug, Default)]
pub(super) struct Gathered<'a> {
    pub kv: BTreeMap<&'a str, &'a str>,
    pub exists: Vec<&'a str>,
    pub sections: BTreeMap<&'a str, Vec<&'a str>>,
}

impl<'a> Gathered<'a> {
    fn get(&self, k: &str) -> &'a str {
        self.kv.get(k).copied().unwrap_or_default()
    }

    fn section(&self, name: &str) -> &[&'a str] {
        self.sections
            .get(name)
            .map(Vec::as_slice)
            .unwrap_or_default()
    }

    fn exists(&self, path: &str) -> bool {
        self.exists.contains(&path)
    }
}

/// Every fact this file gathers, `ansible_`-prefixed; `machine` is `uname -m`.
pub(super) fn facts(
    g: &Gathered<'_>,
    machine: &str,
    python_present: Option<bool>,
) -> Map<String, Value> {
    let mut f = Map::new();
    let mut put = |k: &str, v: Value| {
        f.insert(format!("ansible_{k}"), v);
    };
    put("date_time", date_time(g));
    for (k, v) in user(g) {
        put(&k, v);
    }
    let cmdline = g.section("cmdline").join(" ");
    if !cmdline.trim().is_empty() {
        put("cmdline", cmdline_facts(&cmdline, false));
        put("proc_cmdline", cmdline_facts(&cmdline, true));
    }
    put("dns", dns(g.section("resolv")));
    put("lsb", lsb(g.section("lsb")));
    put("fips", json!(g.get("fips").trim() == "1"));
    put(
        "apparmor",
        json!({"status": if g.exists("/sys/kernel/security/apparmor") { "enabled" } else { "disabled" }}),
    );
    put("selinux", selinux(g, python_present));
    let (caps, enforced) = capabilities(g.kv.get("caps").copied());
    put("system_capabilities", caps);
    put("system_capabilities_enforced", enforced);
    for (k, v) in ssh_keys(g.section("sshkeys")) {
        put(&k, v);
    }
    put("service_mgr", json!(service_mgr(g)));
    put("is_chroot", json!(is_chroot(g)));
    let bits = g.get("long_bit").trim().to_string();
    put("userspace_bits", json!(bits));
    match (machine, bits.as_str()) {
        ("x86_64", "64") => put("userspace_architecture", json!("x86_64")),
        ("x86_64", "32") => put("userspace_architecture", json!("i386")),
        _ => {}
    }
    let machine_id = g.get("machine_id").trim();
    if !machine_id.is_empty() {
        put("machine_id", json!(machine_id));
    }
    if let Ok(up) = g.get("uptime").trim().parse::<f64>() {
        put("uptime_seconds", json!(up as u64));
    }
    let load: Vec<f64> = g
        .get("loadavg")
        .split_whitespace()
        .take(3)
        .filter_map(|x| x.parse().ok())
        .collect();
    if let [one, five, fifteen] = load[..] {
        put("loadavg", json!({"1m": one, "5m": five, "15m": fifteen}));
    }
    for (k, v) in memory(g.section("meminfo")) {
        put(&k, v);
    }
    for (k, v) in cpu(g.section("cpuinfo"), machine) {
        put(&k, v);
    }
    for (k, v) in dmi(g) {
        put(&k, v);
    }
    put("mounts", mounts(g));
    put("lvm", lvm(g));
    if g.sections.contains_key("blockdevs") {
        let (devices, links) = devices(g);
        put("devices", devices);
        put("device_links", links);
    }
    let iqn = g
        .section("iscsi")
        .iter()
        .find_map(|l| l.strip_prefix("InitiatorName="))
        .unwrap_or_default();
    put("iscsi_iqn", json!(iqn));
    let nqn = g
        .section("nvme")
        .iter()
        .find(|l| l.starts_with("nqn."))
        .copied()
        .unwrap_or_default();
    put("hostnqn", json!(nqn));
    let wwn: Vec<&str> = g
        .section("fc_wwn")
        .iter()
        .map(|l| l.trim_end().get(2..).unwrap_or_default())
        .collect();
    put("fibre_channel_wwn", json!(wwn));
    put(
        "locally_reachable_ips",
        locally_reachable(g.section("local_routes")),
    );
    for (k, v) in virtual_facts(g) {
        put(&k, v);
    }
    f
}

/// `date_time`, from one instant printed in local time and in UTC.
fn date_time(g: &Gathered<'_>) -> Value {
    let l: Vec<&str> = g.get("dt_local").split('|').collect();
    let u: Vec<&str> = g.get("dt_utc").split('|').collect();
    let [
        year,
        month,
        weekday,
        wday,
        week,
        day,
        hour,
        minute,
        second,
        epoch,
        nanos,
        tz,
        offset,
    ] = l[..]
    else {
        return json!({});
    };
    let micro = nanos.get(..6).unwrap_or("000000");
    let (utc, utc_micro) = match u[..] {
        [t, n] => (t, n.get(..6).unwrap_or("000000")),
        _ => ("", "000000"),
    };
    json!({
        "year": year, "month": month, "weekday": weekday, "weekday_number": wday,
        "weeknumber": week, "day": day, "hour": hour, "minute": minute, "second": second,
        "epoch": epoch, "epoch_int": epoch,
        "date": format!("{year}-{month}-{day}"), "time": format!("{hour}:{minute}:{second}"),
        "iso8601_micro": format!("{utc}.{utc_micro}Z"), "iso8601": format!("{utc}Z"),
        "iso8601_basic": format!("{year}{month}{day}T{hour}{minute}{second}{micro}"),
        "iso8601_basic_short": format!("{year}{month}{day}T{hour}{minute}{second}"),
        "tz": tz, "tz_dst": tz_dst(g.get("dt_jan"), g.get("dt_jul")), "tz_offset": offset,
    })
}

/// C's `tzname[1]`: the zone's daylight-saving name (the one further east of the two
/// times of year), or its only name.
fn tz_dst(jan: &str, jul: &str) -> String {
    let parse = |s: &str| {
        let (name, off) = s.split_once('|')?;
        Some((name.to_string(), off.parse::<i32>().ok()?))
    };
    match (parse(jan), parse(jul)) {
        (Some(a), Some(b)) if b.1 > a.1 => b.0,
        (Some(a), Some(b)) if a.1 > b.1 => a.0,
        (Some(a), _) => a.0,
        _ => String::new(),
    }
}

/// The user collector: the account's `passwd` entry and the process's ids.
fn user(g: &Gathered<'_>) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    let p: Vec<&str> = g.get("passwd").split(':').collect();
    if let [_, _, _, _, gecos, dir, shell] = p[..] {
        out.push(("user_gecos".into(), json!(gecos)));
        out.push(("user_dir".into(), json!(dir)));
        out.push(("user_shell".into(), json!(shell)));
    }
    let id = |k: &str| g.get(k).trim().parse::<u64>().ok();
    out.push(("real_user_id".into(), json!(id("real_uid"))));
    out.push(("real_group_id".into(), json!(id("real_gid"))));
    out.push(("effective_user_id".into(), json!(id("user_uid"))));
    out.push(("effective_group_id".into(), json!(id("user_gid"))));
    out
}

/// `/proc/cmdline` as a mapping: `cmdline` keeps the last value of a repeated key,
/// `proc_cmdline` lists them; a word without `=` is `true`. Words split as Python's
/// `shlex.split(posix=False)`: at blanks outside quotes, the quotes kept.
fn cmdline_facts(line: &str, list_repeats: bool) -> Value {
    let mut words = Vec::new();
    let (mut cur, mut quote) = (String::new(), None);
    for c in line.chars() {
        match (quote, c) {
            (None, c) if c.is_whitespace() => {
                if !cur.is_empty() {
                    words.push(std::mem::take(&mut cur));
                }
            }
            (None, '"' | '\'') => {
                quote = Some(c);
                cur.push(c);
            }
            (Some(q), c) if c == q => {
                quote = None;
                cur.push(c);
            }
            _ => cur.push(c),
        }
    }
    if !cur.is_empty() {
        words.push(cur);
    }
    let mut m = Map::new();
    for w in words {
        match w.split_once('=') {
            None => {
                m.insert(w, json!(true));
            }
            Some((k, v)) => match m.get_mut(k) {
                Some(Value::Array(a)) if list_repeats => a.push(json!(v)),
                Some(old) if list_repeats && !old.is_boolean() => {
                    *old = json!([old.clone(), v]);
                }
                _ => {
                    m.insert(k.to_string(), json!(v));
                }
            },
        }
    }
    Value::Object(m)
}

/// `/etc/resolv.conf`: `nameservers`, `domain`, `search`, `sortlist`, `options`.
fn dns(lines: &[&str]) -> Value {
    let mut d = Map::new();
    for line in lines {
        let w: Vec<&str> = line.split_whitespace().collect();
        let Some((&key, rest)) = w.split_first() else {
            continue;
        };
        if key.starts_with('#') || key.starts_with(';') {
            continue;
        }
        match key {
            "nameserver" => {
                if let Some(ns) = rest.first() {
                    let list = d.entry("nameservers").or_insert_with(|| json!([]));
                    if let Some(a) = list.as_array_mut() {
                        a.push(json!(ns));
                    }
                }
            }
            "domain" => {
                if let Some(x) = rest.first() {
                    d.insert("domain".into(), json!(x));
                }
            }
            "search" | "sortlist" => {
                d.insert(key.into(), json!(rest));
            }
            "options" => {
                let opts = d.entry("options").or_insert_with(|| json!({}));
                for o in rest {
                    match o.split_once(':') {
                        Some((k, v)) => opts[k] = json!(v),
                        None => opts[*o] = json!(true),
                    }
                }
            }
            _ => {}
        }
    }
    Value::Object(d)
}

/// `lsb`: from `lsb_release -a` when it ran, else `/etc/lsb-release`.
fn lsb(lines: &[&str]) -> Value {
    let mut m = Map::new();
    let from_command = lines.contains(&"lsb_release=1");
    for line in lines {
        let (key, value) = if from_command {
            match line.split_once(':') {
                Some((k, v)) => (
                    match k.trim() {
                        "LSB Version" => "release_lsb",
                        "Distributor ID" => "id",
                        "Description" => "description",
                        "Release" => "release",
                        "Codename" => "codename",
                        _ => continue,
                    },
                    v.trim(),
                ),
                None => continue,
            }
        } else {
            match line.split_once('=') {
                Some((k, v)) => (
                    match k.trim() {
                        "DISTRIB_ID" => "id",
                        "DISTRIB_RELEASE" => "release",
                        "DISTRIB_DESCRIPTION" => "description",
                        "DISTRIB_CODENAME" => "codename",
                        _ => continue,
                    },
                    v.trim().trim_matches('"'),
                ),
                None => continue,
            }
        };
        m.insert(key.into(), json!(value));
    }
    if let Some(r) = m.get("release").and_then(Value::as_str) {
        let major = r.split('.').next().unwrap_or_default().to_string();
        m.insert("major_release".into(), json!(major));
    }
    Value::Object(m)
}

/// `selinux`: without the Python binding (its `libselinux`) ansible-core can only say so;
/// with it, the state of `/sys/fs/selinux` and `/etc/selinux/config`.
fn selinux(g: &Gathered<'_>, python_present: Option<bool>) -> Value {
    if python_present == Some(false) {
        return json!({"status": "Missing selinux Python library"});
    }
    if !g.exists("/sys/fs/selinux/enforce") {
        return json!({"status": "disabled"});
    }
    let config: BTreeMap<&str, &str> = g
        .get("selinux_config")
        .split_whitespace()
        .filter_map(|kv| kv.split_once('='))
        .collect();
    let policyvers = g.get("selinux_policyvers").trim().parse::<u64>().ok();
    json!({
        "status": "enabled",
        "policyvers": policyvers.map_or(json!("unknown"), |v| json!(v)),
        "config_mode": config.get("SELINUX").copied().unwrap_or("unknown"),
        "mode": match g.get("selinux_enforce").trim() {
            "1" => "enforcing",
            "0" => "permissive",
            _ => "unknown",
        },
        "type": config.get("SELINUXTYPE").copied().unwrap_or("unknown"),
    })
}

/// `system_capabilities` and `_enforced` from `capsh --print`'s `Current:` line.
fn capabilities(current: Option<&str>) -> (Value, Value) {
    let Some(line) = current else {
        return (json!("N/A"), json!("N/A"));
    };
    if line.split(':').nth(1).map(str::trim) == Some("=ep") {
        return (json!([]), json!("False"));
    }
    if line.is_empty() {
        return (json!([]), json!("NA"));
    }
    let caps: Vec<&str> = line
        .split_once('=')
        .map(|(_, c)| c.split(',').map(str::trim).collect())
        .unwrap_or_default();
    (json!(caps), json!("True"))
}

/// The SSH host keys, the first file found of each type.
fn ssh_keys(lines: &[&str]) -> Vec<(String, Value)> {
    let mut out: Vec<(String, Value)> = Vec::new();
    for line in lines {
        let w: Vec<&str> = line.split_whitespace().collect();
        let [algo, keytype, key, ..] = w[..] else {
            continue;
        };
        let name = format!("ssh_host_key_{algo}_public");
        if out.iter().any(|(k, _)| *k == name) {
            continue;
        }
        out.push((format!("{name}_keytype"), json!(keytype)));
        out.push((name, json!(key)));
    }
    out
}

/// `service_mgr`: PID 1's command name (some mapped), else what the host has installed.
fn service_mgr(g: &Gathered<'_>) -> String {
    let from_init =
        g.kv.get("sbin_init")
            .map(|p| p.rsplit('/').next().unwrap_or(p));
    let proc_1 = match g.get("proc_1").trim() {
        "" => from_init.map(str::trim),
        p => Some(p),
    };
    if let Some(p) = proc_1.filter(|p| *p != "init" && !p.ends_with("sh")) {
        return match p {
            "procd" => "openwrt_init",
            "runit-init" => "runit",
            "svscan" => "svc",
            "openrc-init" => "openrc",
            other => other,
        }
        .to_string();
    }
    let systemctl = g.kv.contains_key("has_systemctl");
    let canary = [
        "/run/systemd/system/",
        "/dev/.run/systemd/",
        "/dev/.systemd/",
    ]
    .iter()
    .any(|c| g.exists(c));
    if systemctl && canary {
        "systemd"
    } else if g.kv.contains_key("has_initctl") && g.exists("/etc/init/") {
        "upstart"
    } else if g.exists("/sbin/openrc") {
        "openrc"
    } else if systemctl && from_init == Some("systemd") {
        "systemd"
    } else if g.exists("/etc/init.d/") {
        "sysvinit"
    } else if g.exists("/etc/dinit.d/") {
        "dinit"
    } else {
        "service"
    }
    .to_string()
}

/// `is_chroot`: `debian_chroot` set, or `/` another file system than PID 1's root.
fn is_chroot(g: &Gathered<'_>) -> Option<bool> {
    if !g.get("debian_chroot").trim().is_empty() {
        return Some(true);
    }
    let mut w = g.get("root_stat").split_whitespace();
    match (w.next(), w.next()) {
        (Some(mine), Some(pid1)) => Some(mine != pid1),
        // Without PID 1's root to compare (not root): `/` is a file system's root when its
        // inode is that file system's root inode.
        (Some(mine), None) => {
            let fs = g.get("root_fs");
            let root_inode = if fs.contains("btrfs") {
                "256"
            } else if fs.contains("xfs") {
                "128"
            } else {
                "2"
            };
            Some(mine.rsplit(':').next() != Some(root_inode))
        }
        _ => None,
    }
}

/// `memtotal_mb`-style facts are `setup`'s own; this is `memory_mb`.
fn memory(lines: &[&str]) -> Vec<(String, Value)> {
    let mut m = BTreeMap::new();
    for line in lines {
        if let Some((k, v)) = line.split_once(':')
            && let Some(Ok(kb)) = v.split_whitespace().next().map(str::parse::<i64>)
        {
            m.insert(k.trim().to_lowercase(), kb / 1024);
        }
    }
    if m.is_empty() {
        return vec![];
    }
    let get = |k: &str| m.get(k).copied();
    let sub = |a: Option<i64>, b: Option<i64>| Some(a? - b?);
    let nocache_free = match (get("cached"), get("memfree"), get("buffers")) {
        (Some(c), Some(f), Some(b)) => Some(c + f + b),
        _ => None,
    };
    vec![(
        "memory_mb".into(),
        json!({
            "real": {"total": get("memtotal"), "used": sub(get("memtotal"), get("memfree")), "free": get("memfree")},
            "nocache": {"free": nocache_free, "used": sub(get("memtotal"), nocache_free)},
            "swap": {"total": get("swaptotal"), "free": get("swapfree"),
                     "used": sub(get("swaptotal"), get("swapfree")), "cached": get("swapcached")},
        }),
    )]
}

/// `processor`, `processor_count`, `_cores`, `_threads_per_core`, `_vcpus`, `flags`, as the
/// Linux hardware collector counts them from `/proc/cpuinfo` (`processor_nproc` is
/// `setup`'s own, the CPUs the process may run on).
fn cpu(lines: &[&str], machine: &str) -> Vec<(String, Value)> {
    if lines.is_empty() {
        return vec![];
    }
    let mut processor = Vec::new();
    let (mut i, mut vendor, mut model, mut procs) = (0usize, 0, 0, 0);
    let mut sockets: indexmap::IndexMap<String, i64> = indexmap::IndexMap::new();
    let mut cores: indexmap::IndexMap<String, i64> = indexmap::IndexMap::new();
    let (mut physid, mut coreid) = (String::from("0"), String::from("0"));
    let mut flags = None;
    for line in lines {
        let (key, val) = match line.split_once(':') {
            Some((k, v)) => (k.trim(), v.trim()),
            None => (line.trim(), ""),
        };
        match key {
            "flags" => flags = Some(val.split_whitespace().collect::<Vec<_>>()),
            "model name" | "Processor" | "vendor_id" | "cpu" | "Vendor" | "processor" => {
                processor.push(val);
                match key {
                    "vendor_id" => vendor += 1,
                    "model name" => model += 1,
                    "processor" => procs += 1,
                    _ => {}
                }
                i += 1;
            }
            "physical id" => {
                physid = val.to_string();
                sockets.entry(physid.clone()).or_insert(1);
            }
            "core id" => {
                coreid = val.to_string();
                // As the collector does: a new core id is checked against the sockets.
                if !sockets.contains_key(&coreid) {
                    cores.insert(coreid.clone(), 1);
                }
            }
            "cpu cores" => {
                sockets.insert(physid.clone(), val.parse().unwrap_or(0));
            }
            "siblings" => {
                cores.insert(coreid.clone(), val.parse().unwrap_or(0));
            }
            _ => {}
        }
    }
    if vendor > 0 && vendor == model {
        i = vendor;
    }
    if machine.starts_with("armv") || machine.starts_with("aarch") || machine.starts_with("ppc") {
        i = procs;
    }
    let count = if sockets.is_empty() {
        i as i64
    } else {
        sockets.len() as i64
    };
    let per_socket = sockets
        .values()
        .next()
        .copied()
        .filter(|c| *c != 0)
        .unwrap_or(1);
    let threads = match cores.values().next() {
        Some(c) => (*c as f64 / per_socket as f64).round() as i64,
        None => (1.0 / per_socket as f64).round() as i64,
    };
    let mut out = vec![
        ("processor".to_string(), json!(processor)),
        ("processor_count".into(), json!(count)),
        ("processor_cores".into(), json!(per_socket)),
        ("processor_threads_per_core".into(), json!(threads)),
        (
            "processor_vcpus".into(),
            json!(threads * count * per_socket),
        ),
    ];
    if let Some(flags) = flags {
        out.push(("flags".into(), json!(flags)));
    }
    out
}

/// The DMI facts from `/sys/devices/virtual/dmi/id`, `NA` where a file is missing or empty.
fn dmi(g: &Gathered<'_>) -> Vec<(String, Value)> {
    const FORM_FACTOR: &[&str] = &[
        "Unknown",
        "Other",
        "Unknown",
        "Desktop",
        "Low Profile Desktop",
        "Pizza Box",
        "Mini Tower",
        "Tower",
        "Portable",
        "Laptop",
        "Notebook",
        "Hand Held",
        "Docking Station",
        "All In One",
        "Sub Notebook",
        "Space-saving",
        "Lunch Box",
        "Main Server Chassis",
        "Expansion Chassis",
        "Sub Chassis",
        "Bus Expansion Chassis",
        "Peripheral Chassis",
        "RAID Chassis",
        "Rack Mount Chassis",
        "Sealed-case PC",
        "Multi-system",
        "CompactPCI",
        "AdvancedTCA",
        "Blade",
        "Blade Enclosure",
        "Tablet",
        "Convertible",
        "Detachable",
        "IoT Gateway",
        "Embedded PC",
        "Mini PC",
        "Stick PC",
    ];
    let files: BTreeMap<&str, &str> = g
        .section("dmi")
        .iter()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k, v.trim()))
        .filter(|(_, v)| !v.is_empty())
        .collect();
    let sysfs = g.exists("/sys/devices/virtual/dmi/id/product_name");
    let value = |file: &str| {
        files
            .get(file)
            .filter(|_| sysfs)
            .map_or("NA".to_string(), |v| v.to_string())
    };
    let mut out: Vec<(String, Value)> = [
        "bios_date",
        "bios_vendor",
        "bios_version",
        "board_asset_tag",
        "board_name",
        "board_serial",
        "board_vendor",
        "board_version",
        "chassis_asset_tag",
        "chassis_serial",
        "chassis_vendor",
        "chassis_version",
        "product_name",
        "product_serial",
        "product_uuid",
        "product_version",
    ]
    .iter()
    .map(|k| (k.to_string(), json!(value(k))))
    .collect();
    out.push(("system_vendor".into(), json!(value("sys_vendor"))));
    let form = match files.get("chassis_type").filter(|_| sysfs) {
        Some(t) => match t.parse::<usize>().ok().and_then(|i| FORM_FACTOR.get(i)) {
            Some(name) => name.to_string(),
            None => format!("unknown ({t})"),
        },
        None => "NA".into(),
    };
    out.push(("form_factor".into(), json!(form)));
    out
}

/// Turn a mount table's octal escapes (`\040` for a blank) into their characters.
fn unescape_octal(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\'
            && i + 4 <= b.len()
            && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c))
            && let Ok(n) = u8::from_str_radix(&s[i + 1..i + 4], 8)
        {
            out.push(n);
            i += 4;
            continue;
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `mounts`: each mount of a device (a path or `host:/path`) with its sizes (`statvfs`)
/// and the device's UUID (`lsblk`), bind mounts marked as `findmnt` shows them.
fn mounts(g: &Gathered<'_>) -> Value {
    let sizes: BTreeMap<&str, Vec<u64>> = g
        .section("statfs")
        .iter()
        .filter_map(|l| l.split_once('\t'))
        .map(|(m, s)| {
            (
                m,
                s.split_whitespace()
                    .filter_map(|x| x.parse().ok())
                    .collect(),
            )
        })
        .collect();
    let uuids: BTreeMap<&str, &str> = g
        .section("lsblk")
        .iter()
        .filter_map(|l| l.trim().rsplit_once(char::is_whitespace))
        .map(|(d, u)| (d.trim(), u.trim()))
        .collect();
    let binds: Vec<&str> = g
        .section("findmnt")
        .iter()
        .filter_map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            (w.len() >= 2 && w[1].ends_with(']')).then_some(w[0])
        })
        .collect();
    let mut out = Vec::new();
    for line in g.section("mounts") {
        let w: Vec<&str> = line.split_whitespace().collect();
        if w.len() < 4 {
            continue;
        }
        let f: Vec<String> = w.iter().map(|x| unescape_octal(x)).collect();
        let (device, mount, fstype, options) = (&f[0], &f[1], &f[2], &f[3]);
        if (!device.starts_with(['/', '\\']) && !device.contains(":/")) || fstype == "none" {
            continue;
        }
        let num = |i: usize| f.get(i).and_then(|x| x.parse::<i64>().ok()).unwrap_or(0);
        let mut options = options.clone();
        if binds.contains(&mount.as_str()) && !options.contains("bind") {
            options.push_str(",bind");
        }
        let mut m = json!({
            "mount": mount, "device": device, "fstype": fstype, "options": options,
            "dump": num(4), "passno": num(5),
        });
        if let Some([frsize, bsize, blocks, avail, files, ffree]) = sizes
            .get(w[1])
            .and_then(|s| <[u64; 6]>::try_from(s.as_slice()).ok())
        {
            m["size_total"] = json!(frsize * blocks);
            m["size_available"] = json!(frsize * avail);
            m["block_size"] = json!(bsize);
            m["block_total"] = json!(blocks);
            m["block_available"] = json!(avail);
            m["block_used"] = json!(blocks - avail.min(blocks));
            m["inode_total"] = json!(files);
            m["inode_available"] = json!(ffree);
            m["inode_used"] = json!(files - ffree.min(files));
        }
        m["uuid"] = json!(uuids.get(device.as_str()).copied().unwrap_or("N/A"));
        out.push(m);
    }
    Value::Array(out)
}

/// `bytes_to_human`: a size with two decimals in the largest binary unit it reaches.
fn bytes_to_human(size: f64) -> String {
    crate::template::bytes_to_human(size, false, None)
}

/// `devices` and `device_links`: each block device with its sysfs attributes, partitions,
/// holders and `/dev/disk` links, as the Linux hardware collector reads them (a missing or
/// empty attribute is `null`).
fn devices(g: &Gathered<'_>) -> (Value, Value) {
    // A sysfs attribute the script could not read is \x01; an empty one is missing too.
    let attr = |v: Option<&&str>| -> Option<String> {
        v.map(|s| s.trim())
            .filter(|s| !s.is_empty() && *s != "\u{1}")
            .map(str::to_string)
    };
    let mut links: BTreeMap<&str, BTreeMap<String, std::collections::BTreeSet<String>>> =
        ["ids", "uuids", "labels", "masters"]
            .into_iter()
            .map(|k| (k, BTreeMap::new()))
            .collect();
    for l in g.section("disk_links") {
        if let [kind, name, target] = l.split('\t').collect::<Vec<_>>()[..] {
            let kind = match kind {
                "id" => "ids",
                "uuid" => "uuids",
                _ => "labels",
            };
            if let Some(m) = links.get_mut(kind) {
                m.entry(target.to_string())
                    .or_default()
                    .insert(name.to_string());
            }
        }
    }
    for l in g.section("slaves") {
        if let Some((owner, slave)) = l.split_once('\t')
            && let Some(m) = links.get_mut("masters")
        {
            m.entry(slave.to_string())
                .or_default()
                .insert(owner.to_string());
        }
    }
    let links_of = |name: &str| -> Value {
        links
            .iter()
            .map(|(kind, m)| {
                (
                    kind.to_string(),
                    json!(m.get(name).cloned().unwrap_or_default()),
                )
            })
            .collect::<Map<_, _>>()
            .into()
    };
    let uuid_of = |part: &str| -> Value {
        links["uuids"]
            .iter()
            .find(|(target, _)| *target == part)
            .and_then(|(_, names)| names.iter().next())
            .map_or(Value::Null, |u| json!(u))
    };
    let sector_size = |lbs: Option<String>, hw: Option<String>| -> Value {
        lbs.or(hw).map_or(json!(512), |s| json!(s))
    };
    let as_int = |v: &Value| -> i64 {
        match v {
            Value::String(s) => s.parse().unwrap_or(512),
            other => other.as_i64().unwrap_or(512),
        }
    };
    let mut devices = Map::new();
    let mut holders: BTreeMap<(&str, &str), Vec<String>> = BTreeMap::new();
    for l in g.section("blockdevs") {
        let w: Vec<&str> = l.split('\t').collect();
        if let ["holder" | "pholder", owner, dm, name] = w[..] {
            let kind = if w[0] == "holder" { "dev" } else { "part" };
            let shown = attr(Some(&name)).unwrap_or_else(|| dm.to_string());
            holders.entry((kind, owner)).or_default().push(shown);
        }
    }
    let lspci = g.section("lspci");
    for l in g.section("blockdevs") {
        let w: Vec<&str> = l.split('\t').collect();
        match w.first() {
            Some(&"dev") if w.len() >= 17 => {
                let (name, sysdir) = (w[1], w[2]);
                let f = |i: usize| attr(w.get(i));
                let mut d = json!({
                    "virtual": w[3].parse::<i64>().unwrap_or(1),
                    "links": links_of(name),
                    "vendor": f(4), "model": f(5), "sas_address": f(6), "sas_device_handle": f(7),
                    "removable": f(9),
                    "support_discard": if f(10).as_deref() == Some("0") { Some("0".to_string()) } else { f(11) },
                    "partitions": {},
                    "rotational": f(12),
                    "scheduler_mode": f(13)
                        .and_then(|s| Some(s[s.find('[')? + 1..s.rfind(']')?].to_string()))
                        .unwrap_or_default(),
                    "host": "",
                    "holders": holders.get(&("dev", name)).cloned().unwrap_or_default(),
                });
                if let Some(serial) = f(8) {
                    d["serial"] = json!(serial);
                }
                let sectorsize = sector_size(f(14), f(15));
                let sectors = f(16).and_then(|s| s.parse::<i64>().ok()).unwrap_or(0) * 512
                    / as_int(&sectorsize).max(1);
                d["size"] = json!(bytes_to_human(sectors as f64 * as_int(&sectorsize) as f64));
                d["sectorsize"] = sectorsize;
                d["sectors"] = json!(sectors);
                // The PCI address in the device's sysfs path names its host adapter.
                if let Some(pci) = sysdir
                    .split('/')
                    .rev()
                    .skip(1)
                    .find(|part| is_pci_address(part))
                    && let Some(line) = lspci.iter().find(|l| l.starts_with(&format!("{pci} ")))
                {
                    d["host"] = json!(line[pci.len() + 1..]);
                }
                devices.insert(name.to_string(), d);
            }
            Some(&"part") if w.len() >= 7 => {
                let (disk, part) = (w[1], w[2]);
                if !is_partition_of(part, disk) {
                    continue;
                }
                let f = |i: usize| attr(w.get(i));
                let sectorsize = sector_size(f(4), f(5));
                let sectors = f(6).and_then(|s| s.parse::<i64>().ok()).unwrap_or(0) * 512
                    / as_int(&sectorsize).max(1);
                let p = json!({
                    "links": links_of(part),
                    "start": f(3).map_or(json!(0), |s| json!(s)),
                    "sectorsize": sectorsize,
                    "sectors": sectors,
                    "size": bytes_to_human(sectors as f64 * as_int(&sectorsize) as f64),
                    "uuid": uuid_of(part),
                    "holders": holders.get(&("part", part)).cloned().unwrap_or_default(),
                });
                if let Some(d) = devices.get_mut(disk) {
                    d["partitions"][part] = p;
                }
            }
            _ => {}
        }
    }
    let device_links: Map<String, Value> = links
        .iter()
        .map(|(kind, m)| (kind.to_string(), json!(m)))
        .collect();
    (Value::Object(devices), Value::Object(device_links))
}

/// `0000:00:05.0`: a PCI address as the collector's pattern takes it.
fn is_pci_address(s: &str) -> bool {
    let b = s.as_bytes();
    let hex = |c: &u8| c.is_ascii_digit() || (b'a'..=b'f').contains(c);
    b.len() == 12
        && b[..4].iter().all(hex)
        && b[4] == b':'
        && b[5..7].iter().all(hex)
        && b[7] == b':'
        && (b[8] == b'0' || b[8] == b'1')
        && hex(&b[9])
        && b[10] == b'.'
        && (b'0'..=b'7').contains(&b[11])
}

/// Whether a folder of a disk's sysfs directory is one of its partitions (`vda1`,
/// `nvme0n1p2`).
fn is_partition_of(folder: &str, disk: &str) -> bool {
    let Some(rest) = folder.strip_prefix(disk) else {
        return false;
    };
    let digits = rest.strip_prefix('p').unwrap_or(rest);
    !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
}

/// `lvm`: volume groups, logical and physical volumes as `vgs`/`lvs`/`pvs` list them (run
/// as root only), else `N/A`.
fn lvm(g: &Gathered<'_>) -> Value {
    if !g.sections.contains_key("vgs") {
        return json!("N/A");
    }
    let rows = |name: &str| -> Vec<Vec<String>> {
        g.section(name)
            .iter()
            .filter(|l| !l.trim().is_empty())
            .map(|l| l.trim().split(',').map(str::to_string).collect())
            .collect()
    };
    let mut vgs = Map::new();
    for r in rows("vgs") {
        if r.len() >= 4 {
            vgs.insert(
                r[0].clone(),
                json!({"size_g": r[r.len() - 2], "free_g": r[r.len() - 1], "num_lvs": r[2], "num_pvs": r[1]}),
            );
        }
    }
    let mut lvs = Map::new();
    for r in rows("lvs") {
        if r.len() >= 4 {
            lvs.insert(r[0].clone(), json!({"size_g": r[3], "vg": r[1]}));
        }
    }
    let mut pvs = Map::new();
    for r in rows("pvs") {
        if r.len() >= 6 {
            pvs.insert(
                r[0].clone(),
                json!({"size_g": r[4], "free_g": r[5], "vg": r[1]}),
            );
        }
    }
    json!({"lvs": lvs, "vgs": vgs, "pvs": pvs})
}

/// `locally_reachable_ips`: the `local` routes of the kernel's local table, by family.
fn locally_reachable(lines: &[&str]) -> Value {
    let (mut v4, mut v6): (Vec<&str>, Vec<&str>) = (vec![], vec![]);
    for line in lines {
        let w: Vec<&str> = line.split_whitespace().collect();
        if let ["local", address, ..] = w[..] {
            let list = if address.contains(':') {
                &mut v6
            } else {
                &mut v4
            };
            if !list.contains(&address) {
                list.push(address);
            }
        }
    }
    json!({"ipv4": v4, "ipv6": v6})
}

/// `virtualization_type`, `_role`, `_tech_guest`, `_tech_host`, in the Linux virtual
/// collector's order of evidence (containers first, then DMI, `/proc/cpuinfo`, kernel
/// modules and `/dev/kvm`); `NA` when nothing says.
fn virtual_facts(g: &Gathered<'_>) -> Vec<(String, Value)> {
    let mut guest: Vec<String> = Vec::new();
    let mut host: Vec<String> = Vec::new();
    let (mut vtype, mut role): (Option<String>, Option<String>) = (None, None);
    let mut found = false;
    let add = |set: &mut Vec<String>, t: &str| {
        if !set.iter().any(|x| x == t) {
            set.push(t.to_string());
        }
    };
    macro_rules! guest {
        ($t:expr, $role:expr) => {{
            add(&mut guest, $t);
            if !found {
                vtype = Some($t.to_string());
                if let Some(r) = $role {
                    role = Some(r.to_string());
                }
                found = true;
            }
        }};
    }
    for line in g.section("cgroup1") {
        let docker = line.contains("/docker/")
            || line
                .split("/docker-")
                .nth(1)
                .is_some_and(|r| r.contains(".scope"));
        if docker {
            guest!("docker", Some("guest"));
        }
        if line.contains("/lxc/") || line.contains("/machine.slice/machine-lxc") {
            guest!("lxc", Some("guest"));
        }
        if line.contains("/system.slice/containerd.service") {
            guest!("containerd", Some("guest"));
        }
    }
    for line in g.section("environ1") {
        if line.contains("container=lxc") {
            guest!("lxc", Some("guest"));
        }
        if line.contains("container=podman") {
            guest!("podman", Some("guest"));
        }
        if line.len() > "container=".len() {
            guest!("container", Some("guest"));
        }
    }
    if g.exists("/proc/vz") && !g.exists("/proc/lve") {
        vtype = Some("openvz".into());
        if g.exists("/proc/bc") {
            add(&mut host, "openvz");
            if !found {
                role = Some("host".into());
            }
        } else {
            add(&mut guest, "openvz");
            if !found {
                role = Some("guest".into());
            }
        }
        found = true;
    }
    let systemd_container = g.get("systemd_container").trim();
    if !systemd_container.is_empty() {
        guest!(systemd_container, Some("guest"));
    }
    if g.exists("/.dockerenv") || g.exists("/.dockerinit") {
        guest!("docker", Some("guest"));
    }
    let containers = ["docker", "lxc", "podman", "openvz", "containerd"];
    if guest.iter().any(|t| containers.contains(&t.as_str())) || !systemd_container.is_empty() {
        add(&mut guest, "container");
    }
    if g.exists("/proc/xen") {
        let xen_host = g.get("xen_caps").contains("control_d");
        if xen_host {
            add(&mut host, "xen");
        }
        if !found {
            vtype = Some("xen".into());
            role = Some(if xen_host { "host" } else { "guest" }.into());
        }
        found = true;
    }
    if !found {
        role = Some("guest".into());
    }
    let dmi: BTreeMap<&str, &str> = g
        .section("dmi")
        .iter()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k, v.trim()))
        .collect();
    let d = |k: &str| dmi.get(k).copied().unwrap_or_default();
    let (product, vendor, family, bios) = (
        d("product_name"),
        d("sys_vendor"),
        d("product_family"),
        d("bios_vendor"),
    );
    let evidence: [(bool, &str); 14] = [
        (
            [
                "KVM",
                "KVM Server",
                "Bochs",
                "AHV",
                "CloudStack KVM Hypervisor",
            ]
            .contains(&product),
            "kvm",
        ),
        (vendor == "oVirt", "oVirt"),
        (vendor == "Red Hat" && family == "RHV", "RHV"),
        (
            vendor == "Red Hat" && family != "RHV" && product == "RHEV Hypervisor",
            "RHEV",
        ),
        (product.starts_with("VMware"), "VMware"),
        (
            ["OpenStack Compute", "OpenStack Nova"].contains(&product),
            "openstack",
        ),
        (bios == "Xen", "xen"),
        (bios == "innotek GmbH", "virtualbox"),
        (
            ["Amazon EC2", "DigitalOcean", "Hetzner", "Linode"].contains(&bios),
            "kvm",
        ),
        (
            [
                "QEMU",
                "Amazon EC2",
                "DigitalOcean",
                "Google",
                "Scaleway",
                "Nutanix",
            ]
            .contains(&vendor),
            "kvm",
        ),
        (vendor == "KubeVirt", "KubeVirt"),
        (vendor == "Microsoft Corporation", "VirtualPC"),
        (
            vendor == "Parallels Software International Inc.",
            "parallels",
        ),
        (vendor == "OpenStack Foundation", "openstack"),
    ];
    for (seen, t) in evidence {
        if seen {
            guest!(t, None::<&str>);
        }
    }
    if !found {
        role = None;
    }
    for line in g.section("cpuinfo") {
        let t = if line.starts_with("model name") && line.contains("QEMU Virtual CPU") {
            "kvm"
        } else if (line.starts_with("vendor_id") && line.contains("User Mode Linux"))
            || (line.starts_with("model name") && line.contains("UML"))
        {
            "uml"
        } else {
            continue;
        };
        guest!(t, Some("guest"));
    }
    let modules = g.section("modules");
    if modules.contains(&"kvm") {
        add(&mut host, "kvm");
        if !found {
            vtype = Some("kvm".into());
            role = Some("host".into());
        }
        found = true;
    }
    if modules.contains(&"vboxdrv") {
        add(&mut host, "virtualbox");
        if !found {
            vtype = Some("virtualbox".into());
            role = Some("host".into());
            found = true;
        }
    }
    if modules.contains(&"virtio") {
        add(&mut host, "kvm");
        if !found {
            vtype = Some("kvm".into());
            role = Some("guest".into());
            found = true;
        }
    }
    if g.exists("/dev/kvm") {
        add(&mut host, "kvm");
        if !found {
            vtype = Some("kvm".into());
            role = Some("host".into());
            found = true;
        }
    }
    if !found {
        vtype = Some("NA".into());
        role = Some("NA".into());
    }
    let mut out = vec![
        ("virtualization_tech_guest".to_string(), json!(guest)),
        ("virtualization_tech_host".into(), json!(host)),
    ];
    if let Some(t) = vtype {
        out.push(("virtualization_type".into(), json!(t)));
    }
    if let Some(r) = role {
        out.push(("virtualization_role".into(), json!(r)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gathered<'a>(kv: &[(&'a str, &'a str)], sections: &[(&'a str, &'a str)]) -> Gathered<'a> {
        let mut g = Gathered::default();
        for (k, v) in kv {
            if *k == "exists" {
                g.exists.push(v);
            } else {
                g.kv.insert(k, v);
            }
        }
        for (name, text) in sections {
            g.sections.insert(name, text.lines().collect());
        }
        g
    }

    #[test]
    fn cpus_are_counted_by_socket_core_and_sibling() {
        // Two sockets of 4 cores with hyper-threading: 16 logical CPUs.
        let mut text = String::new();
        for n in 0..16 {
            text += &format!(
                "processor\t: {n}\nvendor_id\t: GenuineIntel\nmodel name\t: Xeon\n\
                 physical id\t: {}\nsiblings\t: 8\ncore id\t\t: {}\ncpu cores\t: 4\nflags\t\t: fpu vme\n\n",
                n / 8,
                n % 4
            );
        }
        let lines: Vec<&str> = text.lines().collect();
        let f: BTreeMap<String, Value> = cpu(&lines, "x86_64").into_iter().collect();
        assert_eq!(f["processor_count"], 2);
        assert_eq!(f["processor_cores"], 4);
        assert_eq!(f["processor_threads_per_core"], 2);
        assert_eq!(f["processor_vcpus"], 16);
        assert_eq!(f["processor"].as_array().unwrap().len(), 48);
        assert_eq!(f["flags"], json!(["fpu", "vme"]));
    }

    #[test]
    fn kernel_command_line_keeps_last_or_lists_repeats() {
        let line = r#"BOOT_IMAGE=/vmlinuz console=tty0 console=ttyS0 quiet x="a b""#;
        assert_eq!(
            cmdline_facts(line, false),
            json!({"BOOT_IMAGE": "/vmlinuz", "console": "ttyS0", "quiet": true, "x": "\"a b\""})
        );
        assert_eq!(
            cmdline_facts(line, true)["console"],
            json!(["tty0", "ttyS0"])
        );
    }

    #[test]
    fn resolver_and_lsb_files() {
        let d = dns(&[
            "# comment",
            "nameserver 10.0.0.2",
            "nameserver 10.0.0.3",
            "search a.example b.example",
            "options ndots:2 rotate",
        ]);
        assert_eq!(
            d,
            json!({"nameservers": ["10.0.0.2", "10.0.0.3"], "search": ["a.example", "b.example"],
                   "options": {"ndots": "2", "rotate": true}})
        );
        let from_file = lsb(&[
            "DISTRIB_ID=Ubuntu",
            "DISTRIB_RELEASE=22.04",
            "DISTRIB_CODENAME=jammy",
        ]);
        assert_eq!(
            from_file,
            json!({"id": "Ubuntu", "release": "22.04", "major_release": "22", "codename": "jammy"})
        );
        let from_command = lsb(&["Distributor ID:\tDebian", "Release:\t12", "lsb_release=1"]);
        assert_eq!(
            from_command,
            json!({"id": "Debian", "release": "12", "major_release": "12"})
        );
    }

    #[test]
    fn virtualization_from_containers_dmi_and_modules() {
        let docker = gathered(
            &[("exists", "/.dockerenv"), ("exists", "/dev/kvm")],
            &[("cgroup1", "0::/")],
        );
        let v: BTreeMap<String, Value> = virtual_facts(&docker).into_iter().collect();
        assert_eq!(v["virtualization_type"], "docker");
        assert_eq!(v["virtualization_role"], "guest");
        assert_eq!(
            v["virtualization_tech_guest"],
            json!(["docker", "container"])
        );
        assert_eq!(v["virtualization_tech_host"], json!(["kvm"]));

        let kvm_guest = gathered(&[], &[("dmi", "product_name=Standard PC\nsys_vendor=QEMU")]);
        let v: BTreeMap<String, Value> = virtual_facts(&kvm_guest).into_iter().collect();
        assert_eq!(v["virtualization_type"], "kvm");
        assert_eq!(v["virtualization_role"], "guest");

        let bare = gathered(&[], &[]);
        let v: BTreeMap<String, Value> = virtual_facts(&bare).into_iter().collect();
        assert_eq!(
            (&v["virtualization_type"], &v["virtualization_role"]),
            (&json!("NA"), &json!("NA"))
        );
    }

    #[test]
    fn service_manager_capabilities_and_selinux() {
        let systemd = gathered(&[("proc_1", "systemd")], &[]);
        assert_eq!(service_mgr(&systemd), "systemd");
        let shell_pid1 = gathered(
            &[
                ("proc_1", "bash"),
                ("has_systemctl", "1"),
                ("exists", "/etc/init.d/"),
            ],
            &[],
        );
        assert_eq!(service_mgr(&shell_pid1), "sysvinit");
        assert_eq!(
            capabilities(Some("Current: =ep")),
            (json!([]), json!("False"))
        );
        // As the collector splits it: the words after the first `=`.
        assert_eq!(
            capabilities(Some("Current: cap_chown,cap_kill=ep")),
            (json!(["ep"]), json!("True"))
        );
        assert_eq!(capabilities(None), (json!("N/A"), json!("N/A")));
        let none = gathered(&[], &[]);
        assert_eq!(
            selinux(&none, Some(false))["status"],
            "Missing selinux Python library"
        );
        assert_eq!(selinux(&none, Some(true))["status"], "disabled");
    }

    #[test]
    fn mounts_unescape_and_mark_binds_with_sizes() {
        let g = gathered(
            &[],
            &[
                (
                    "mounts",
                    "/dev/sda1 / ext4 rw,relatime 0 1\nproc /proc proc rw 0 0\n\
                     /dev/sdb1 /srv/my\\040data xfs rw 0 2\n",
                ),
                ("statfs", "/\t4096 4096 100 40 50 20"),
                ("lsblk", "/dev/sda1 1111-2222\n/dev/sdb1"),
                ("findmnt", "/ /dev/sda1[/x]\n/srv /dev/sdb1"),
            ],
        );
        let m = mounts(&g);
        let m = m.as_array().unwrap();
        assert_eq!(m.len(), 2, "{m:?}");
        assert_eq!(m[0]["size_total"], 409600);
        assert_eq!(m[0]["block_used"], 60);
        assert_eq!(m[0]["inode_used"], 30);
        assert_eq!(m[0]["uuid"], "1111-2222");
        assert_eq!(m[0]["options"], "rw,relatime,bind");
        assert_eq!(m[1]["mount"], "/srv/my data");
        assert_eq!(m[1]["uuid"], "N/A");
        assert_eq!(m[1]["passno"], 2);
    }

    #[test]
    fn lvm_and_local_routes() {
        let none = gathered(&[], &[]);
        assert_eq!(lvm(&none), json!("N/A"));
        let g = gathered(
            &[],
            &[
                ("vgs", "  vg0,1,2,0,wz--n-,99.00,10.00"),
                (
                    "lvs",
                    "  root,vg0,-wi-ao----,20.00\n  swap,vg0,-wi-ao----,4.00",
                ),
                ("pvs", "  /dev/sda2,vg0,lvm2,a--,99.00,10.00"),
            ],
        );
        assert_eq!(
            lvm(&g),
            json!({
                "vgs": {"vg0": {"size_g": "99.00", "free_g": "10.00", "num_lvs": "2", "num_pvs": "1"}},
                "lvs": {"root": {"size_g": "20.00", "vg": "vg0"}, "swap": {"size_g": "4.00", "vg": "vg0"}},
                "pvs": {"/dev/sda2": {"size_g": "99.00", "free_g": "10.00", "vg": "vg0"}},
            })
        );
        let routes = [
            "local 10.0.0.5 dev eth0 proto kernel scope host src 10.0.0.5",
            "broadcast 10.0.0.255 dev eth0 proto kernel scope link src 10.0.0.5",
            "local 127.0.0.0/8 dev lo proto kernel scope host src 127.0.0.1",
            "local ::1 dev lo proto kernel metric 0 pref medium",
            "local ::1 dev lo table local proto kernel metric 0 pref medium",
        ];
        assert_eq!(
            locally_reachable(&routes),
            json!({"ipv4": ["10.0.0.5", "127.0.0.0/8"], "ipv6": ["::1"]})
        );
    }

    #[test]
    fn block_devices_with_partitions_holders_and_links() {
        assert_eq!(bytes_to_human(0.0), "0.00 Bytes");
        assert_eq!(bytes_to_human(268435456.0 * 1024.0), "256.00 GB");
        assert!(is_partition_of("vda1", "vda") && is_partition_of("nvme0n1p2", "nvme0n1"));
        assert!(!is_partition_of("vdaa", "vda") && !is_partition_of("queue", "vda"));
        assert!(is_pci_address("0000:00:05.0") && !is_pci_address("virtio2"));
        let na = "\u{1}";
        let dev = format!(
            "dev\tvda\t/sys/block/../devices/pci0000:00/0000:00:05.0/virtio2/block/vda\t1\t\
             0x1af4\t{na}\t{na}\t{na}\t{na}\t0\t0\t0\t1\tnone [mq-deadline]\t512\t512\t2097152"
        );
        let text = format!(
            "{dev}\nholder\tvda\tdm-0\tvg0-root\npart\tvda\tvda1\t2048\t512\t512\t2095104\n\
             pholder\tvda1\tdm-1\t{na}"
        );
        let g = gathered(
            &[],
            &[
                ("blockdevs", text.as_str()),
                ("disk_links", "uuid\tabcd-1234\tvda1\nid\tvirtio-x\tvda"),
                ("slaves", "dm-0\tvda1"),
                (
                    "lspci",
                    "0000:00:05.0 SCSI storage controller: Virtio block device",
                ),
            ],
        );
        let (devices, links) = devices(&g);
        let vda = &devices["vda"];
        assert_eq!(vda["vendor"], "0x1af4");
        assert_eq!(vda["model"], Value::Null);
        assert_eq!(vda["support_discard"], "0");
        assert_eq!(vda["scheduler_mode"], "mq-deadline");
        assert_eq!(vda["sectors"], 2097152);
        assert_eq!(vda["size"], "1.00 GB");
        assert_eq!(vda["host"], "SCSI storage controller: Virtio block device");
        assert_eq!(vda["holders"], json!(["vg0-root"]));
        assert_eq!(vda["links"]["ids"], json!(["virtio-x"]));
        let part = &vda["partitions"]["vda1"];
        assert_eq!(part["start"], "2048");
        assert_eq!(part["uuid"], "abcd-1234");
        assert_eq!(part["holders"], json!(["dm-1"]));
        assert_eq!(part["links"]["masters"], json!(["dm-0"]));
        assert_eq!(links["uuids"], json!({"vda1": ["abcd-1234"]}));
    }

    #[test]
    fn chroot_by_pid_1_root_or_by_root_inode() {
        let same = gathered(&[("root_stat", "2049:2 2049:2")], &[]);
        assert_eq!(is_chroot(&same), Some(false));
        let other = gathered(&[("root_stat", "2049:2 2050:2")], &[]);
        assert_eq!(is_chroot(&other), Some(true));
        let xfs_unprivileged = gathered(&[("root_stat", "2049:128"), ("root_fs", "xfs")], &[]);
        assert_eq!(is_chroot(&xfs_unprivileged), Some(false));
        let ext4_unprivileged =
            gathered(&[("root_stat", "2049:1234"), ("root_fs", "ext2/ext3")], &[]);
        assert_eq!(is_chroot(&ext4_unprivileged), Some(true));
        let named = gathered(&[("debian_chroot", "sid")], &[]);
        assert_eq!(is_chroot(&named), Some(true));
    }

    #[test]
    fn daylight_saving_name_is_the_eastern_one() {
        assert_eq!(tz_dst("CET|+0100", "CEST|+0200"), "CEST");
        assert_eq!(tz_dst("AEDT|+1100", "AEST|+1000"), "AEDT");
        assert_eq!(tz_dst("UTC|+0000", "UTC|+0000"), "UTC");
    }
}
