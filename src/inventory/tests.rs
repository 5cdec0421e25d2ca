//! Inventory loading, merging and host patterns against the fixtures in
//! `tests/fixtures/inventory/` (the same files the differential test feeds ansible-inventory).

use serde_json::{Value, json};

use super::*;

fn fixture(rel: &str) -> String {
    format!(
        "{}/tests/fixtures/inventory/{rel}",
        env!("CARGO_MANIFEST_DIR")
    )
}

fn ini() -> Inventory {
    load(&[fixture("ini/hosts")]).unwrap()
}

fn yaml() -> Inventory {
    load(&[fixture("yaml/hosts.yml")]).unwrap()
}

fn var(inv: &Inventory, host: &str, name: &str) -> Value {
    inv.host_vars(host)
        .get(name)
        .cloned()
        .unwrap_or(Value::Null)
}

#[test]
fn ini_hosts_groups_and_ranges() {
    let inv = ini();
    let hosts: Vec<&str> = inv.hosts.keys().map(String::as_str).collect();
    assert_eq!(
        hosts,
        [
            "lonely",
            "web01",
            "web02",
            "web03",
            "web04",
            "db-a.example.com",
            "db-b.example.com"
        ]
    );
    assert_eq!(inv.groups["app"].children, ["web", "db"]);
    assert_eq!(inv.hosts_of_group("app").len(), 6);
    assert_eq!(inv.hosts_of_group("ungrouped"), ["lonely"]);
    assert_eq!(inv.groups_of("web02"), ["all", "app", "web"]);
    assert_eq!(inv.groups_of("lonely"), ["all", "ungrouped"]);
    let groups = inv.groups_map();
    assert_eq!(
        groups["db"],
        json!(["db-a.example.com", "db-b.example.com"])
    );
    assert_eq!(
        inv.magic_vars("web01")["group_names"],
        json!(["app", "web"])
    );
}

#[test]
fn ini_values_are_python_literals() {
    let inv = ini();
    assert_eq!(var(&inv, "web04", "ansible_port"), json!(2222));
    assert_eq!(var(&inv, "web04", "flag"), json!(true));
    assert_eq!(var(&inv, "web04", "list"), json!([1, 2]));
    assert_eq!(var(&inv, "web04", "quoted"), json!("a b"));
    assert_eq!(var(&inv, "web01", "app_only"), json!("yes"));
}

#[test]
fn variables_merge_in_ansible_order() {
    let inv = ini();
    // inventory host var beats every group var
    assert_eq!(var(&inv, "lonely", "level"), json!("host"));
    // host_vars/ beats the inventory file's host and group vars
    assert_eq!(var(&inv, "web01", "level"), json!("web01-dir"));
    assert_eq!(var(&inv, "web01", "http_port"), json!(9000));
    // group_vars/web/ (two files, later wins) beats [web:vars]
    assert_eq!(var(&inv, "web02", "level"), json!("web-dir"));
    assert_eq!(var(&inv, "web02", "override_me"), json!("second"));
    // child group [web:vars] beats parent [app:vars]; [db:vars] beats [app:vars]
    assert_eq!(var(&inv, "web02", "http_port"), json!(80));
    assert_eq!(var(&inv, "db-a.example.com", "level"), json!("db"));
    assert_eq!(var(&inv, "db-a.example.com", "http_port"), json!(81));
    // group_vars/all.yml beats [all:vars]
    assert_eq!(var(&inv, "db-a.example.com", "global"), json!(2));
    // inline host var beats everything from groups
    assert_eq!(var(&inv, "web04", "http_port"), json!(8080));
    assert_eq!(var(&inv, "web01", "never"), Value::Null);
}

#[test]
fn yaml_inventory_children_and_vars() {
    let inv = yaml();
    assert_eq!(inv.hosts_of_group("linux").len(), 5);
    assert_eq!(inv.hosts_of_group("ungrouped"), ["jump"]);
    assert_eq!(var(&inv, "controller-02", "level"), json!("linux-dir"));
    assert_eq!(var(&inv, "controller-02", "role"), json!("controller"));
    assert_eq!(var(&inv, "compute-01", "level"), json!("compute-01-dir"));
    assert_eq!(var(&inv, "compute-02", "level"), json!("compute-02-inline"));
    assert_eq!(var(&inv, "win-01", "ansible_user"), json!("Administrator"));
    assert_eq!(
        var(&inv, "jump", "nested"),
        json!({"a": 1, "b": ["x", "y"]})
    );
}

#[test]
fn patterns_select_like_ansible() {
    let inv = ini();
    let cases: &[(&str, &[&str])] = &[
        ("web", &["web01", "web02", "web03", "web04"]),
        ("w?b0*", &["web01", "web02", "web03", "web04"]),
        ("web*:!web04", &["web01", "web02", "web03"]),
        ("app:&db", &["db-a.example.com", "db-b.example.com"]),
        ("web[0]", &["web01"]),
        ("web[-1]", &["web04"]),
        ("web[1:2]", &["web02", "web03"]),
        ("web[2:]", &["web03", "web04"]),
        (
            "lonely,db",
            &["lonely", "db-a.example.com", "db-b.example.com"],
        ),
        ("~web0[34]", &["web03", "web04"]),
        ("~db-.*", &["db-a.example.com", "db-b.example.com"]),
        ("*.example.com", &["db-a.example.com", "db-b.example.com"]),
        ("!web", &["lonely", "db-a.example.com", "db-b.example.com"]),
        ("localhost", &["localhost"]),
        ("nope", &[]),
        ("ungrouped:web01", &["lonely", "web01"]),
    ];
    for (pattern, want) in cases {
        assert_eq!(inv.select(pattern).unwrap(), *want, "pattern {pattern}");
    }
    assert_eq!(inv.select("all").unwrap().len(), 7);
    assert_eq!(inv.select("*").unwrap().len(), 7);
    assert_eq!(
        inv.select_limited("app", Some("web*:!web01")).unwrap(),
        ["web02", "web03", "web04"]
    );
    assert!(inv.select("web[9]").is_err());
}

#[test]
fn implicit_localhost_is_local_and_not_in_all() {
    let inv = ini();
    assert!(
        !inv.select("all")
            .unwrap()
            .contains(&"localhost".to_string())
    );
    assert_eq!(var(&inv, "localhost", "ansible_connection"), json!("local"));
}

#[test]
fn host_lists_and_folders() {
    let inv = load(&["a,b:2200,".to_string()]).unwrap();
    assert_eq!(inv.select("all").unwrap(), ["a", "b"]);
    assert_eq!(var(&inv, "b", "ansible_port"), json!(2200));
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("one.yml"), "all:\n  hosts:\n    x:\n").unwrap();
    std::fs::write(dir.path().join("two"), "[g]\ny\n").unwrap();
    std::fs::write(dir.path().join("skipped.ini"), "[g]\nz\n").unwrap();
    std::fs::create_dir(dir.path().join("group_vars")).unwrap();
    std::fs::write(dir.path().join("group_vars/g.yml"), "gv: 1\n").unwrap();
    let inv = load(&[dir.path().display().to_string()]).unwrap();
    assert_eq!(inv.select("all").unwrap(), ["x", "y"]);
    assert_eq!(var(&inv, "y", "gv"), json!(1));
}

#[test]
fn errors_name_file_line_and_value() {
    let dir = tempfile::tempdir().unwrap();
    let bad_ini = dir.path().join("bad");
    std::fs::write(&bad_ini, "[web]\nh1 ok=1\nh2 novalue\n").unwrap();
    let err = load(&[bad_ini.display().to_string()])
        .unwrap_err()
        .to_string();
    assert!(err.contains("bad:3") && err.contains("`novalue`"), "{err}");

    let bad_yaml = dir.path().join("bad.yml");
    std::fs::write(&bad_yaml, "all:\n  hosts:\n    - a\n").unwrap();
    let err = load(&[bad_yaml.display().to_string()]).unwrap_err();
    let chain = format!("{err}: {}", std::error::Error::source(&err).unwrap());
    assert!(
        chain.contains("bad.yml") && chain.contains("line 3"),
        "{chain}"
    );

    std::fs::write(&bad_yaml, "all:\n  childs: {}\n").unwrap();
    let err = load(&[bad_yaml.display().to_string()]).unwrap_err();
    let chain = format!("{err}: {}", std::error::Error::source(&err).unwrap());
    assert!(
        chain.contains("childs") && chain.contains("line 2"),
        "{chain}"
    );

    let bad_range = dir.path().join("range");
    std::fs::write(&bad_range, "web[5:1]\n").unwrap();
    let err = load(&[bad_range.display().to_string()])
        .unwrap_err()
        .to_string();
    assert!(err.contains("web[5:1]"), "{err}");

    assert!(load(&["/nonexistent/inventory".to_string()]).is_err());
}

#[test]
fn words_that_match_nothing_are_named_and_a_subscript_of_nothing_is_nothing() {
    let mut inv = Inventory::default();
    inv.add_host("web1", Some("web"), VarMap::new());
    inv.group_mut("empty");
    assert_eq!(
        inv.unmatched_words("web:nosuch:!other[0]:empty:all:web*"),
        ["nosuch", "other"]
    );
    assert_eq!(inv.select("nosuch[0]").unwrap(), Vec::<String>::new());
    let err = inv.select("web[3]").unwrap_err().to_string();
    assert!(
        err.contains("No hosts matched the subscripted pattern 'web[3]'"),
        "{err}"
    );
}
