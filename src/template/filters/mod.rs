//! Registration of kinit's filters and tests in the minijinja environment, each under its
//! short name and its fully qualified collection name (`ansible.builtin.to_json`,
//! `ansible.utils.ipaddr`, ...), as playbooks use both.

pub mod chance;
pub mod core;
pub mod data;
pub mod group;
pub mod ipaddr;
pub mod math;
pub mod paths;
pub mod serial;
pub mod text;
pub mod url;
pub mod vault;

use minijinja::Environment;

use super::predicates as p;

/// Add `name` and `<prefix>.name` for each filter, passing undefined values through (see
/// `propagating`).
macro_rules! filters {
    ($env:expr, $prefix:literal, { $($name:literal => $f:expr),* $(,)? }) => {
        $(
            let f = propagating($name, concat!($prefix, ".", $name), minijinja::Value::from_function($f));
            $env.add_filter($name, f.clone());
            $env.add_filter(concat!($prefix, ".", $name), f);
        )*
    };
}

/// The filters that see undefined arguments themselves (`@accept_args_markers` in
/// ansible-core's `plugins/filter/core.py` and `encryption.py`).
const SEE_UNDEFINED: &[&str] = &["default", "d", "ternary", "mandatory", "type_debug"];

/// Filter `inner` as ansible-core 2.19 calls plugins (`_invoke_plugin` in
/// `_internal/_templating/_jinja_plugins.py`): when an argument (the input included) is
/// undefined, the filter does not run and the result is that undefined value. So
/// `missing | map('upper') is undefined` holds, `missing | select(..) | default([])` is `[]`,
/// and rendering `missing | upper` fails as `missing` is undefined.
///
/// A failure is worded as ansible-core words a plugin's (`The filter plugin
/// 'ansible.builtin.unique' failed: 'bool' object is not iterable`), see `plugin_failed`.
fn propagating(
    name: &str,
    full: &'static str,
    inner: minijinja::Value,
) -> impl Fn(
    &minijinja::State<'_, '_>,
    minijinja::value::Rest<minijinja::Value>,
) -> Result<minijinja::Value, minijinja::Error>
+ Clone
+ Send
+ Sync
+ 'static {
    let sees = SEE_UNDEFINED.contains(&name);
    move |state, args| {
        if !sees && let Some(undefined) = args.iter().find(|a| a.is_undefined()) {
            return Ok(undefined.clone());
        }
        inner
            .call(state, &args)
            .map_err(|e| plugin_failed("filter", full, e))
    }
}

/// Test `inner`, its failure worded as ansible-core words a plugin's (`plugin_failed`).
fn plugin_test(
    full: &'static str,
    inner: minijinja::Value,
) -> impl Fn(
    &minijinja::State<'_, '_>,
    minijinja::value::Rest<minijinja::Value>,
) -> Result<bool, minijinja::Error>
+ Clone
+ Send
+ Sync
+ 'static {
    move |state, args| {
        inner
            .call(state, &args)
            .map(|v| v.is_true())
            .map_err(|e| plugin_failed("test", full, e))
    }
}

/// A filter's or test's failure as ansible-core 2.19 reports an exception raised inside a
/// plugin (`AnsibleTemplatePluginRuntimeError` in `_internal/_templating/_jinja_plugins.py`):
/// `The filter plugin 'ansible.builtin.X' failed: <what it raised>`. An undefined value keeps
/// its own error, as there, and a message that already names its plugin is left alone.
fn plugin_failed(kind: &str, full: &str, e: minijinja::Error) -> minijinja::Error {
    if e.kind() == minijinja::ErrorKind::UndefinedError {
        return e;
    }
    let detail = e.detail().map_or_else(|| e.to_string(), str::to_owned);
    if detail.starts_with("The ") && detail.contains(" plugin '") {
        return e;
    }
    minijinja::Error::new(
        e.kind(),
        format!("The {kind} plugin '{full}' failed: {detail}"),
    )
}

macro_rules! tests {
    ($env:expr, $prefix:literal, { $($name:literal => $f:expr),* $(,)? }) => {
        $(
            let t = plugin_test(concat!($prefix, ".", $name), minijinja::Value::from_function($f));
            $env.add_test($name, t.clone());
            $env.add_test(concat!($prefix, ".", $name), t);
        )*
    };
}

/// Jinja built-ins, each reachable as `__builtin_<name>` behind `propagating`: an undefined
/// input passes through instead of becoming `''`/`0`/`[]`.
macro_rules! builtins {
    ($env:expr, { $($name:literal => $f:path),* $(,)? }) => {
        $(
            $env.add_filter(concat!("__builtin_", $name), $f);
            $env.add_filter(
                $name,
                propagating($name, concat!("ansible.builtin.", $name), minijinja::Value::from_function($f)),
            );
        )*
    };
}

/// A `map`/`select`-like filter's failure to find the filter or test it was named, in
/// ansible-core's words (`The filter plugin 'ansible.builtin.map' failed: No filter named
/// 'x'.`); the engine's own error does not name it.
fn unknown_plugin(
    e: minijinja::Error,
    filter: &str,
    name: Option<&minijinja::Value>,
) -> minijinja::Error {
    use minijinja::ErrorKind;
    let kind = match e.kind() {
        ErrorKind::UnknownFilter => "filter",
        ErrorKind::UnknownTest => "test",
        _ => return e,
    };
    if e.detail().is_some() {
        return e;
    }
    let name = name.map(|n| n.to_string()).unwrap_or_default();
    minijinja::Error::new(
        ErrorKind::InvalidOperation,
        format!("The filter plugin 'ansible.builtin.{filter}' failed: No {kind} named '{name}'."),
    )
}

/// Jinja's `select`/`reject` (`$inner`, named `$filter`), and with `attr` the `*attr` forms,
/// naming an unknown test as ansible-core does (`unknown_plugin`).
macro_rules! naming_unknown_test {
    ($fname:ident, $inner:path, $filter:literal) => {
        fn $fname(
            state: &minijinja::State<'_, '_>,
            value: minijinja::Value,
            test: Option<String>,
            args: minijinja::value::Rest<minijinja::Value>,
        ) -> Result<Vec<minijinja::Value>, minijinja::Error> {
            let name = test.as_deref().map(minijinja::Value::from);
            $inner(state, value, test.as_deref().map(Into::into), args)
                .map_err(|e| unknown_plugin(e, $filter, name.as_ref()))
        }
    };
    ($fname:ident, $inner:path, $filter:literal, attr) => {
        fn $fname(
            state: &minijinja::State<'_, '_>,
            value: minijinja::Value,
            attr: String,
            test: Option<String>,
            args: minijinja::value::Rest<minijinja::Value>,
        ) -> Result<Vec<minijinja::Value>, minijinja::Error> {
            let name = test.as_deref().map(minijinja::Value::from);
            $inner(
                state,
                value,
                attr.into(),
                test.as_deref().map(Into::into),
                args,
            )
            .map_err(|e| unknown_plugin(e, $filter, name.as_ref()))
        }
    };
}
naming_unknown_test!(select_named, minijinja::filters::select, "select");
naming_unknown_test!(reject_named, minijinja::filters::reject, "reject");
naming_unknown_test!(
    selectattr_named,
    minijinja::filters::selectattr,
    "selectattr",
    attr
);
naming_unknown_test!(
    rejectattr_named,
    minijinja::filters::rejectattr,
    "rejectattr",
    attr
);

/// Jinja's `map`, except that `map(attribute='x')` over an item without `x` (and no
/// `default`) is Ansible's error, `object of type 'dict' has no attribute 'x'`, rather than a
/// list holding an undefined value.
fn map_strict(
    state: &minijinja::State<'_, '_>,
    value: minijinja::Value,
    args: minijinja::value::Rest<minijinja::Value>,
) -> Result<Vec<minijinja::Value>, minijinja::Error> {
    let original = value.clone();
    let kwargs = args
        .last()
        .and_then(|v| minijinja::value::Kwargs::try_from(v.clone()).ok());
    // `map('filter', *args, **kwargs)`: Jinja's filter form passes keyword arguments on to the
    // filter (`map('map', attribute='k')`), where the engine's own `map` would read
    // `attribute` as its own.
    if kwargs.is_some()
        && let Some(name) = args.first().and_then(|a| a.as_str())
    {
        return value
            .try_iter()?
            .map(|item| {
                let mut call = vec![item];
                call.extend(args[1..].iter().cloned());
                state
                    .apply_filter(name, &call)
                    .map_err(|e| unknown_plugin(e, "map", args.first()))
            })
            .collect();
    }
    let out = minijinja::filters::map(state, value, minijinja::value::Rest(args.to_vec()))
        .map_err(|e| unknown_plugin(e, "map", args.first()))?;
    let attribute = kwargs.as_ref().and_then(|k| {
        (!k.has("default"))
            .then(|| k.peek::<minijinja::Value>("attribute").ok())
            .flatten()
    });
    if let Some(attr) = attribute
        && let Some(i) = out.iter().position(minijinja::Value::is_undefined)
    {
        let ty = original
            .try_iter()
            .ok()
            .and_then(|mut it| it.nth(i))
            .map(core::type_debug)
            .unwrap_or("object");
        return Err(minijinja::Error::new(
            minijinja::ErrorKind::UndefinedError,
            format!("object of type '{ty}' has no attribute '{attr}'"),
        ));
    }
    Ok(out)
}

pub fn register(env: &mut Environment<'static>) {
    use minijinja::filters as b;
    builtins!(env, {
        "lower" => b::lower, "upper" => b::upper, "title" => b::title,
        "capitalize" => b::capitalize, "replace" => b::replace, "length" => b::length,
        "count" => b::length, "trim" => b::trim, "join" => b::join, "split" => b::split,
        "lines" => b::lines, "first" => b::first, "last" => b::last, "min" => b::min,
        "max" => b::max, "sort" => b::sort, "list" => b::list, "reverse" => b::reverse,
        "sum" => b::sum, "indent" => b::indent, "select" => select_named, "reject" => reject_named,
        "selectattr" => selectattr_named, "rejectattr" => rejectattr_named, "map" => map_strict,
        "items" => b::items, "dictsort" => b::dictsort, "batch" => b::batch,
        "slice" => b::slice, "round" => core::round, "abs" => b::abs, "format" => b::format,
        "urlencode" => url::urlencode,
    });
    filters!(env, "ansible.builtin", {
        "bool" => core::bool_filter,
        "int" => core::to_int,
        "float" => core::to_float,
        "string" => core::to_string,
        "ternary" => core::ternary,
        "mandatory" => core::mandatory,
        "type_debug" => core::type_debug,
        "to_uuid" => core::to_uuid,
        "quote" => core::quote,
        "extract" => core::extract,
        "regex_replace" => text::regex_replace,
        "regex_search" => text::regex_search,
        "regex_findall" => text::regex_findall,
        "regex_escape" => text::regex_escape,
        "b64encode" => text::b64encode,
        "vault" => vault::vault,
        "unvault" => vault::unvault,
        "b64decode" => text::b64decode,
        "basename" => text::basename,
        "dirname" => text::dirname,
        "expanduser" => text::expanduser,
        "comment" => text::comment,
        "realpath" => text::realpath,
        "relpath" => text::relpath,
        "splitext" => text::splitext,
        "hash" => text::hash,
        "checksum" => text::sha1,
        "sha1" => text::sha1,
        "md5" => text::md5,
        "password_hash" => text::password_hash,
        "urldecode" => url::urldecode,
        "urlsplit" => url::urlsplit,
        "combine" => data::combine,
        "dict2items" => data::dict2items,
        "items2dict" => data::items2dict,
        "flatten" => data::flatten,
        "unique" => data::unique,
        "union" => data::union,
        "intersect" => data::intersect,
        "difference" => data::difference,
        "symmetric_difference" => data::symmetric_difference,
        "product" => data::product,
        "zip" => data::zip,
        "zip_longest" => data::zip_longest,
        "groupby" => group::groupby,
        "subelements" => data::subelements,
        "path_join" => text::path_join,
        "commonpath" => text::commonpath,
        "random" => chance::random,
        "shuffle" => chance::shuffle,
        "strftime" => super::now::strftime_filter,
        "to_datetime" => super::pydatetime::to_datetime,
        "tojson" => serial::tojson,
        "to_json" => serial::to_json,
        "to_nice_json" => serial::to_nice_json,
        "from_json" => serial::from_json,
        "to_yaml" => serial::to_yaml,
        "to_nice_yaml" => serial::to_nice_yaml,
        "from_yaml" => serial::from_yaml,
        "from_yaml_all" => serial::from_yaml_all,
        "log" => math::log,
        "pow" => math::pow,
        "root" => math::root,
        "human_readable" => math::human_readable,
        "human_to_bytes" => math::human_to_bytes_filter,
        "combinations" => math::combinations,
        "permutations" => math::permutations,
        "rekey_on_member" => math::rekey_on_member,
        "normpath" => paths::normpath,
        "expandvars" => paths::expandvars,
        "fileglob" => paths::fileglob,
        "win_basename" => paths::win_basename,
        "win_dirname" => paths::win_dirname,
        "win_splitdrive" => paths::win_splitdrive,
    });
    // Jinja2 built-ins that playbooks also spell with the collection prefix.
    for name in [
        "default",
        "d",
        "lower",
        "upper",
        "trim",
        "join",
        "split",
        "replace",
        "first",
        "last",
        "length",
        "count",
        "map",
        "select",
        "reject",
        "selectattr",
        "rejectattr",
        "list",
        "dict",
        "sort",
        "min",
        "max",
        "sum",
        "abs",
        "round",
        "capitalize",
        "title",
        "items",
        "unique",
        "reverse",
        "batch",
        "slice",
        "dictsort",
        "indent",
        "format",
        "tojson",
        "urlencode",
        "wordcount",
        "center",
    ] {
        let full = format!("ansible.builtin.{name}");
        let short = name.to_string();
        env.add_filter(
            full,
            move |state: &minijinja::State<'_, '_>,
                  value: minijinja::Value,
                  args: minijinja::value::Rest<minijinja::Value>| {
                let mut all = vec![value];
                all.extend(args.iter().cloned());
                state.apply_filter(&short, &all)
            },
        );
    }
    env.add_filter("d", minijinja::filters::default);
    // ansible-core's internal test filter: a template result made plain data; kinit's values
    // always are.
    env.add_filter("ansible._protomatter.finalize", |v: minijinja::Value| v);
    filters!(env, "ansible.utils", {
        "ipaddr" => ipaddr::ipaddr,
        "ipv4" => ipaddr::ipv4,
        "ipv6" => ipaddr::ipv6,
        "ipwrap" => |v: minijinja::Value| ipaddr::ipaddr(v, Some("wrap".into())),
        "nthhost" => ipaddr::nthhost,
        "ipmath" => ipaddr::ipmath,
        "next_nth_usable" => ipaddr::next_nth_usable,
        "previous_nth_usable" => ipaddr::previous_nth_usable,
        "network_in_usable" => ipaddr::network_in_usable,
        "network_in_network" => ipaddr::network_in_network,
        "ipsubnet" => ipaddr::ipsubnet,
    });
    // community.general's, by their collection name (`dict` alone is Jinja's own).
    env.add_filter("community.general.random_mac", chance::random_mac);
    env.add_filter("random_mac", chance::random_mac);
    env.add_filter("community.general.dict", |v: minijinja::Value| {
        let none: [(&str, minijinja::Value); 0] = [];
        core::dict(Some(v), minijinja::value::Kwargs::from_iter(none))
    });
    // The filters lived in ansible.netcommon before ansible.utils.
    for (name, f) in [
        ("ansible.netcommon.ipaddr", ipaddr::ipaddr as fn(_, _) -> _),
        ("ansible.netcommon.ipv4", ipaddr::ipv4),
        ("ansible.netcommon.ipv6", ipaddr::ipv6),
    ] {
        env.add_filter(name, f);
    }
    tests!(env, "ansible.builtin", {
        "match" => p::is_match,
        "search" => p::is_search,
        "regex" => p::is_regex,
        "success" => p::success,
        "succeeded" => p::success,
        "successful" => p::success,
        "failed" => p::failed,
        "failure" => p::failed,
        "changed" => p::changed,
        "change" => p::changed,
        "skipped" => p::skipped,
        "skip" => p::skipped,
        "finished" => p::finished,
        "started" => p::started,
        "vaulted_file" => p::vaulted_file,
        "vault_encrypted" => p::vault_encrypted,
        "unreachable" => p::unreachable,
        "timedout" => p::timedout,
        "reachable" => p::reachable,
        "version" => p::version,
        "version_compare" => p::version,
        "subset" => p::subset,
        "issubset" => p::subset,
        "superset" => p::superset,
        "issuperset" => p::superset,
        "contains" => p::contains,
        "truthy" => p::truthy,
        "all" => p::all,
        "any" => p::any,
        "falsy" => p::falsy,
        "exists" => p::path_exists,
        "file" => p::path_file,
        "directory" => p::path_directory,
        "link" => p::path_link,
        "is_file" => p::path_file,
        "is_dir" => p::path_directory,
        "is_link" => p::path_link,
        "link_exists" => p::path_lexists,
        "abs" => p::path_abs,
        "is_abs" => p::path_abs,
        "same_file" => p::path_same_file,
        "is_same_file" => p::path_same_file,
        "mount" => p::path_mount,
        "is_mount" => p::path_mount,
        "nan" => p::is_nan,
        "isnan" => p::is_nan,
        "uri" => url::is_uri,
        "url" => url::is_url,
        "urn" => url::is_urn,
    });
    for name in [
        "defined",
        "undefined",
        "none",
        "string",
        "number",
        "mapping",
        "sequence",
        "iterable",
        "boolean",
        "integer",
        "float",
        "even",
        "odd",
        "in",
        "eq",
        "ne",
        "lt",
        "gt",
        "le",
        "ge",
    ] {
        let full = format!("ansible.builtin.{name}");
        let short = name.to_string();
        env.add_test(
            full,
            move |state: &minijinja::State<'_, '_>,
                  value: minijinja::Value,
                  args: minijinja::value::Rest<minijinja::Value>| {
                let mut all = vec![value];
                all.extend(args.iter().cloned());
                state.perform_test(&short, &all)
            },
        );
    }
}
