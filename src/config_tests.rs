//! Bad input, table-driven: each case is a command line and the exact error it must produce.
//! Covers spec strings, the `*_spec` options in every notation, sizes, extra vars and phases.

use clap::Parser;

use super::*;
use crate::cli::{Cli, Command};

/// Parse a `kinit ...` command line (without `kinit`) into its config; the error text if any.
fn error_of(args: &[&str]) -> Option<String> {
    let cli = Cli::try_parse_from(std::iter::once("kinit").chain(args.iter().copied()))
        .unwrap_or_else(|e| panic!("{args:?} must parse as a command line: {e}"));
    let base = Path::new(env!("CARGO_MANIFEST_DIR"));
    let result = match &cli.command {
        Command::Plan(a) => PlanConfig::from_args(a, base).map(|_| ()),
        Command::Run(a) => RunConfig::from_args(a, base).map(|_| ()),
        other => panic!("not a cluster command: {other:?}"),
    };
    result.err().map(|e| e.to_string())
}

#[rustfmt::skip]
const BAD_INPUTS: &[(&[&str], &str)] = &[
    // spec strings
    (&["plan", "--spec", ""], "spec `` has 1 part(s); expected `<distro>-<driver>-<controllers>-<computes>-<hypervisors>[-suffix]`, e.g. `k8s-libvirt-1-1-1`"),
    (&["plan", "--spec", "k8s-libvirt-1-1"], "spec `k8s-libvirt-1-1` has 4 part(s); expected `<distro>-<driver>-<controllers>-<computes>-<hypervisors>[-suffix]`, e.g. `k8s-libvirt-1-1-1`"),
    (&["plan", "--spec", "okd-libvirt-3-1-1"], "spec `okd-libvirt-3-1-1`: distro `okd` is not supported yet; supported: `k8s`"),
    (&["plan", "--spec", "ocp-libvirt-1-0-1"], "spec `ocp-libvirt-1-0-1`: distro `ocp` is not supported yet; supported: `k8s`"),
    (&["plan", "--spec", "eks-libvirt-1-1-1"], "spec `eks-libvirt-1-1-1`: distro `eks` is not supported yet; supported: `k8s`"),
    (&["plan", "--spec", "rke-libvirt-1-1-1"], "spec `rke-libvirt-1-1-1`: distro `rke` is not supported yet; supported: `k8s`"),
    (&["plan", "--spec", "cdk-libvirt-1-1-1"], "spec `cdk-libvirt-1-1-1`: distro `cdk` is not supported yet; supported: `k8s`"),
    (&["plan", "--spec", "foo-libvirt-1-1-1"], "spec `foo-libvirt-1-1-1`: distro `foo` is unknown; supported: `k8s`"),
    (&["plan", "--spec", "K8S-libvirt-1-1-1"], "spec `K8S-libvirt-1-1-1`: distro `K8S` is unknown; supported: `k8s`"),
    (&["plan", "--spec", "k8s-openstack-1-1-1"], "spec `k8s-openstack-1-1-1`: driver `openstack` is not supported; expected `libvirt`"),
    (&["plan", "--spec", "k8s-libvirt-2-1-1"], "spec `k8s-libvirt-2-1-1`: controllers `2` must be 1, 3 or 5"),
    (&["plan", "--spec", "k8s-libvirt-01-1-1"], "spec `k8s-libvirt-01-1-1`: controllers `01` must be 1, 3 or 5"),
    (&["plan", "--spec", "k8s-libvirt-1-x-1"], "spec `k8s-libvirt-1-x-1`: computes `x` must be a whole number from 0 to 1000"),
    (&["plan", "--spec", "k8s-libvirt-1--1-1"], "spec `k8s-libvirt-1--1-1`: computes `` must be a whole number from 0 to 1000"),
    (&["plan", "--spec", "k8s-libvirt-1-+1-1"], "spec `k8s-libvirt-1-+1-1`: computes `+1` must be a whole number from 0 to 1000"),
    (&["plan", "--spec", "k8s-libvirt-1-1001-1"], "spec `k8s-libvirt-1-1001-1`: computes `1001` must be a whole number from 0 to 1000"),
    (&["plan", "--spec", "k8s-libvirt-1-1-0"], "spec `k8s-libvirt-1-1-0`: hypervisors `0` must be a whole number from 1 to 100"),
    (&["plan", "--spec", "k8s-libvirt-1-1-101"], "spec `k8s-libvirt-1-1-101`: hypervisors `101` must be a whole number from 1 to 100"),
    (&["plan", "--spec", "k8s-libvirt-1-1-1-"], "spec `k8s-libvirt-1-1-1-`: the suffix after the fifth `-` is empty"),
    // --cluster-nodes-spec
    (&["plan", "--spec", "k8s-libvirt-1-1-1", "--cluster-nodes-spec", r#"[{"os":"windows""#], "`--cluster-nodes-spec`: invalid JSON/YAML at line 2 column 1: did not find expected ',' or '}'"),
    (&["plan", "--spec", "k8s-libvirt-1-1-1", "--cluster-nodes-spec", "[[when_group=compute_nodes,os=windows]"], "`--cluster-nodes-spec`: invalid `[k=v,..]` form at column 39: expected `,` or `]` after an entry"),
    (&["plan", "--spec", "k8s-libvirt-1-1-1", "--cluster-nodes-spec", "[[when_group=compute_nodes,windows]]"], "`--cluster-nodes-spec`: invalid `[k=v,..]` form at column 35: expected `key=value`"),
    (&["plan", "--spec", "k8s-libvirt-1-1-1", "--cluster-nodes-spec", "[[os]]"], "`--cluster-nodes-spec` rule #1 must be a mapping of `key: value`, not a list"),
    (&["plan", "--spec", "k8s-libvirt-1-1-1", "--cluster-nodes-spec", r#""windows""#], "`--cluster-nodes-spec` must be a list of rules, not a string"),
    (&["plan", "--spec", "k8s-libvirt-1-1-1", "--cluster-nodes-spec", r#"[{"when_group":"workers"}]"#], "`--cluster-nodes-spec` rule #1: `when_group` is `workers`; expected `controller_nodes`, `compute_nodes` or `cluster_nodes`"),
    (&["plan", "--spec", "k8s-libvirt-1-1-1", "--cluster-nodes-spec", r#"[{"os":"windows","colour":"red"}]"#], "`--cluster-nodes-spec` rule #1: unknown key `colour`; expected one of `when_group`, `when_distro`, `when_type`, `when_name`, `os`, `vcpus`, `maxvcpus`, `ram`, `disk`, `target_order`"),
    (&["plan", "--spec", "k8s-libvirt-1-1-1", "--cluster-nodes-spec", "[[os=solaris]]"], "`--cluster-nodes-spec` rule #1: `os` is `solaris`; expected `debian`, `debian13`, `ubuntu`, `centos` or `windows`"),
    (&["plan", "--spec", "k8s-libvirt-1-1-1", "--cluster-nodes-spec", r#"[{"vcpus":0}]"#], "`--cluster-nodes-spec` rule #1: `vcpus` is `0`; expected a whole number from 1 to 1024"),
    (&["plan", "--spec", "k8s-libvirt-1-1-1", "--cluster-nodes-spec", "[[vcpus=many]]"], "`--cluster-nodes-spec` rule #1: `vcpus` is `many`; expected a whole number from 1 to 1024"),
    (&["plan", "--spec", "k8s-libvirt-1-1-1", "--cluster-nodes-spec", r#"[{"when_type":"physical"}]"#], "`--cluster-nodes-spec` rule #1: `when_type` is `physical`; expected `virtual` or `container`"),
    (&["plan", "--spec", "k8s-libvirt-1-1-1", "--cluster-nodes-spec", r#"[{"when_distro":["k8s","openshift"]}]"#], "`--cluster-nodes-spec` rule #1: `when_distro` is `openshift`; expected a distro (`k8s`, `okd`, `ocp`, `eks`, `rke`, `cdk`, `kid`)"),
    (&["plan", "--spec", "k8s-libvirt-1-1-1", "--cluster-nodes-spec", r#"[{"when_name":"compute-[0"}]"#], "`--cluster-nodes-spec` rule #1: `when_name` is `compute-[0`; expected a node name or glob (`compute-02`, `compute-*`)"),
    (&["plan", "--spec", "k8s-libvirt-1-1-1", "--cluster-nodes-spec", "[[when_name=compute-09,os=windows]]"], "`--cluster-nodes-spec` rule #1: when_name [compute-09] matches no node of this cluster (controller-01, compute-01)"),
    (&["plan", "--spec", "k8s-libvirt-1-1-1", "--cluster-nodes-spec", r#"[{"target_order":"hypervisor-05"}]"#], "node `controller-01`: target_order [hypervisor-05] names no hypervisor of this cluster (hypervisor-01)"),
    (&["plan", "--spec", "k8s-libvirt-1-1-1", "--cluster-nodes-spec", r#"[{"when_group":"controller_nodes","os":"windows"}]"#], "node `controller-01`: os `windows` is only supported on compute nodes"),
    (&["plan", "--spec", "k8s-libvirt-1-1-1", "--cluster-nodes-spec", r#"[{"maxvcpus":4}]"#], "node `controller-01`: maxvcpus 4 is below vcpus 8"),
    (&["plan", "--spec", "k8s-libvirt-1-1-1", "--cluster-nodes-spec", r#"[{"target_order":[]}]"#], "`--cluster-nodes-spec` rule #1: `target_order` is `[]`; expected a name or a list of names"),
    // sizes
    (&["plan", "--spec", "k8s-libvirt-1-1-1", "--cluster-nodes-spec", r#"[{"ram":"16XB"}]"#], "`--cluster-nodes-spec` rule #1: `ram`: `16XB` is not a size; expected KiB as an integer (`16777216`) or a number with a unit K, M, G or T (`16GiB`, `30G`)"),
    (&["plan", "--spec", "k8s-libvirt-1-1-1", "--cluster-nodes-spec", r#"[{"ram":0}]"#], "`--cluster-nodes-spec` rule #1: `ram`: `0` is zero; a size must be at least 1 KiB"),
    (&["plan", "--spec", "k8s-libvirt-1-1-1", "--cluster-nodes-spec", "[[disk=-5G]]"], "`--cluster-nodes-spec` rule #1: `disk`: `-5G` is not a size; expected KiB as an integer (`16777216`) or a number with a unit K, M, G or T (`16GiB`, `30G`)"),
    (&["plan", "--spec", "k8s-libvirt-1-1-1", "--cluster-nodes-spec", "[[disk=16 GB]]"], "`--cluster-nodes-spec` rule #1: `disk`: `16 GB` is not a size; expected KiB as an integer (`16777216`) or a number with a unit K, M, G or T (`16GiB`, `30G`)"),
    (&["plan", "--spec", "k8s-libvirt-1-1-1", "--cluster-nodes-spec", r#"[{"ram":"99999999999999999999G"}]"#], "`--cluster-nodes-spec` rule #1: `ram`: `99999999999999999999G` is too large"),
    (&["plan", "--spec", "k8s-libvirt-1-1-1", "--cluster-nodes-spec", r#"[{"ram":"17179869184T"}]"#], "`--cluster-nodes-spec` rule #1: `ram`: `17179869184T` is too large"),
    (&["plan", "--spec", "k8s-libvirt-1-1-1", "--cluster-nodes-spec", r#"[{"ram":1.5}]"#], "`--cluster-nodes-spec` rule #1: `ram`: `1.5` is not a size; expected KiB as an integer (`16777216`) or a number with a unit K, M, G or T (`16GiB`, `30G`)"),
    (&["plan", "--spec", "k8s-libvirt-1-1-1", "--cluster-nodes-spec", r#"[{"when_group":"compute_nodes","os":"windows","ram":"8GiB"}]"#], "node `compute-01`: Windows needs at least 16 GiB of RAM, it has 8 GiB; set `ram` in --cluster-nodes-spec or pass `-e kinit_ignore_validations=true` to deploy anyway"),
    (&["plan", "--spec", "k8s-libvirt-1-1-1", "-e", "compute_node_ram_size=lots"], "extra vars: `compute_node_ram_size`: `lots` is not a size; expected KiB as an integer (`16777216`) or a number with a unit K, M, G or T (`16GiB`, `30G`)"),
    (&["plan", "--spec", "k8s-libvirt-1-1-1", "-e", "cluster_node_vcpus=0"], "extra vars: `cluster_node_vcpus` is `0`; expected a whole number from 1 to 1024"),
    // --hypervisor-hosts(-spec)
    (&["plan", "--spec", "k8s-libvirt-1-1-1", "--hypervisor-hosts-spec", r#"[{"ansible_host":"a"},{"ansible_host":"b"}]"#], "`--hypervisor-hosts-spec` lists 2 hypervisor(s) but spec `k8s-libvirt-1-1-1` asks for 1"),
    (&["plan", "--spec", "k8s-libvirt-1-1-1", "--hypervisor-hosts", "nyctea,tyto"], "`--hypervisor-hosts` lists 2 hypervisor(s) but spec `k8s-libvirt-1-1-1` asks for 1"),
    (&["plan", "--spec", "k8s-libvirt-1-1-3", "--hypervisor-hosts", "nyctea,,tyto"], "`--hypervisor-hosts`: host #2 is empty; expected names such as `nyctea,tyto`"),
    (&["plan", "--spec", "k8s-libvirt-1-1-1", "--hypervisor-hosts-spec", r#"[{"ssh_port":70000}]"#], "`--hypervisor-hosts-spec` entry #1: `ssh_port` is `70000`; expected a whole number from 1 to 65535"),
    (&["plan", "--spec", "k8s-libvirt-1-1-1", "--hypervisor-hosts-spec", "[[hostname=nyctea]]"], "`--hypervisor-hosts-spec` entry #1: unknown key `hostname`; expected one of `host`, `ansible_host`, `ssh_hostname`, `ssh_user`, `ssh_username`, `ssh_port`"),
    (&["plan", "--spec", "k8s-libvirt-1-1-1", "--hypervisor-hosts-spec", "[[ssh_user=a,ssh_username=b]]"], "`--hypervisor-hosts-spec` entry #1: give only one of `ssh_user` and `ssh_username`"),
    (&["plan", "--spec", "k8s-libvirt-1-1-1", "--hypervisor-hosts-spec", "[[host=my host]]"], "`--hypervisor-hosts-spec` entry #1: `host` is `my host`; expected a name of letters, digits, `-`, `_` and `.`"),
    (&["plan", "--spec", "k8s-libvirt-1-1-2", "--hypervisor-hosts-spec", "[[host=a],[host=a]]"], "the name `a` is used by two hypervisors or nodes"),
    // --network-spec and --cluster-spec
    (&["plan", "--spec", "k8s-libvirt-1-1-1", "--network-spec", r#"{"network":"10.0.0.0/30"}"#], "`--network-spec`: `network` is `10.0.0.0/30`; expected a prefix shorter than /30"),
    (&["plan", "--spec", "k8s-libvirt-1-1-1", "--network-spec", "[network=10.0.0.1/24]"], "`--network-spec`: `network` is `10.0.0.1/24`; expected the network address `10.0.0.0/24`"),
    (&["plan", "--spec", "k8s-libvirt-1-1-1", "--network-spec", "[network=fd00::/64]"], "`--network-spec`: `network` is `fd00::/64`; expected an IPv4 network such as `10.0.0.0/24`"),
    (&["plan", "--spec", "k8s-libvirt-5-1-1", "--network-spec", "[network=10.0.0.0/29]"], "network `10.0.0.0/29` is too small: it has 5 address(es) for nodes and DHCP, the cluster needs 7 plus at least one for DHCP"),
    (&["plan", "--spec", "k8s-libvirt-1-1-1", "--network-spec", r#"{"dns_public":"dns.google"}"#], "`--network-spec`: `dns_public` is `dns.google`; expected IPv4 addresses such as `1.1.1.1`"),
    (&["plan", "--spec", "k8s-libvirt-1-1-1", "--network-spec", "[[network=10.1.0.0/24]]"], "`--network-spec` must be a mapping of `key: value`, not a list"),
    (&["plan", "--spec", "k8s-libvirt-1-1-1", "--cluster-spec", r#"{"cluster_name":"My_Cluster"}"#], "`--cluster-spec`: `cluster_name` is `My_Cluster`; expected lowercase letters, digits and `-` (a DNS label)"),
    (&["plan", "--spec", "k8s-libvirt-1-1-1", "--cluster-spec", "[cluster_domain=-bad.local]"], "`--cluster-spec`: `cluster_domain` is `-bad.local`; expected a DNS domain such as `kubeinit.local`"),
    (&["plan", "--spec", "k8s-libvirt-1-1-1", "--cluster-spec", "[name=x]"], "`--cluster-spec`: unknown key `name`; expected one of `cluster_name`, `cluster_domain`"),
    // extra vars
    (&["plan", "--spec", "k8s-libvirt-1-1-1", "-e", "@missing.yml"], "extra vars #1: cannot read `missing.yml`"),
    (&["plan", "--spec", "k8s-libvirt-1-1-1", "-e", "@"], "extra vars #1: `@` must be followed by a file name"),
    (&["plan", "--spec", "k8s-libvirt-1-1-1", "-e", "./vars.yml"], "extra vars #1: file name `./vars.yml` needs a leading `@` (`-e @./vars.yml`)"),
    (&["plan", "--spec", "k8s-libvirt-1-1-1", "-e", "a=1", "-e", "password=hunter2 oops"], "extra vars #2: `oops` is not `key=value`"),
    (&["plan", "--spec", "k8s-libvirt-1-1-1", "-e", "1abc=2"], "extra vars #1: `1abc` is not a valid variable name (letters, digits and `_`, not starting with a digit)"),
    (&["plan", "--spec", "k8s-libvirt-1-1-1", "-e", r#"{"a": [1, 2"#], "extra vars #1: inline YAML/JSON is invalid: did not find expected ',' or ']', while parsing a flow sequence at line 1 column 7"),
    (&["plan", "--spec", "k8s-libvirt-1-1-1", "-e", "[1, 2]"], "extra vars #1: inline YAML/JSON must be a mapping of names to values, not a list"),
    (&["plan", "--spec", "k8s-libvirt-1-1-1", "-e", "msg='unterminated"], "extra vars #1: unterminated ' quote"),
    (&["plan", "--spec", "k8s-libvirt-1-1-1", "-e", "@Cargo.toml"], "extra vars #1: `Cargo.toml`:2:1: did not find expected <document start>"),
    // phases
    (&["run", "--spec", "k8s-libvirt-1-1-1", "--stop-after", "cleanup"], "`--stop-after`: unknown phase `cleanup`; valid phases: gather-facts, prepare-hypervisors, prepare-environment, cleanup-hypervisors, run-validations, create-network, create-services, prepare-cluster, download-images, deploy-cluster, post-deployment"),
    (&["run", "--spec", "k8s-libvirt-1-1-1", "--start-at", "deploy-cluster", "--stop-after", "gather-facts"], "the window starts at `deploy-cluster` but ends at `gather-facts`: no phase would run"),
    (&["run", "--spec", "k8s-libvirt-1-1-1", "--stop-before", "task-gather-facts"], "`--stop-before gather-facts`: no phase would run"),
    (&["run", "--spec", "k8s-libvirt-1-1-1", "--forks", "0"], "`--forks` must be at least 1"),
];

#[test]
fn bad_inputs_give_exact_errors() {
    assert!(BAD_INPUTS.len() >= 40);
    let mut wrong = Vec::new();
    for (args, expected) in BAD_INPUTS {
        match error_of(args) {
            Some(actual) if actual == *expected => {}
            Some(actual) => wrong.push(format!(
                "{args:?}\n  expected: {expected}\n  actual:   {actual}"
            )),
            None => wrong.push(format!("{args:?}\n  was accepted")),
        }
    }
    assert!(
        wrong.is_empty(),
        "{} case(s) wrong:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}

#[test]
fn good_inputs_are_accepted() {
    for args in [
        &["plan", "--spec", "k8s-libvirt-1-1-1"][..],
        &[
            "plan",
            "--spec",
            "k8s-libvirt-3-0-1-c",
            "--cluster-nodes-spec",
            "[]",
        ],
        &[
            "run",
            "--spec",
            "k8s-libvirt-5-2-2",
            "--stop-after",
            "task-cleanup-hypervisors",
        ],
        &[
            "plan",
            "--spec",
            "k8s-libvirt-1-1-1",
            "--network-spec",
            "network: 172.16.0.0/16",
        ],
    ] {
        assert_eq!(error_of(args), None, "{args:?}");
    }
}

/// `kinit playbook`'s settings: flags win over ansible.cfg, ansible.cfg fills what the flags
/// leave out, and `--forks 0` is refused (it once became 1 silently).
#[test]
fn playbook_flags_win_over_ansible_cfg_and_forks_zero_is_refused() {
    let config = |args: &[&str], cfg: &AnsibleSettings| {
        let cli = Cli::try_parse_from(
            ["kinit", "playbook"]
                .into_iter()
                .chain(args.iter().copied()),
        )
        .unwrap();
        let Command::Playbook(a) = &cli.command else {
            panic!("not `kinit playbook`");
        };
        PlaybookConfig::from_args(a, cfg, Path::new("."), vec![PathBuf::from("/env/roles")])
    };
    let cfg = AnsibleSettings {
        forks: Some(7),
        inventory: vec!["from-cfg.ini".into()],
        roles_path: vec![PathBuf::from("/cfg/roles")],
        remote_user: Some("cfg-user".into()),
        ..AnsibleSettings::default()
    };
    let c = config(&["site.yml"], &cfg).unwrap();
    assert_eq!(c.run.forks, 7);
    assert_eq!(c.inventory, vec!["from-cfg.ini".to_string()]);
    assert_eq!(c.run.connect.remote_user.as_deref(), Some("cfg-user"));
    assert_eq!(
        c.loader.roles_path,
        vec![PathBuf::from("/env/roles"), PathBuf::from("/cfg/roles")]
    );
    assert_eq!(c.mode, PlaybookMode::Run);
    let c = config(
        &[
            "-i",
            "hosts",
            "-f",
            "3",
            "-u",
            "me",
            "--list-tasks",
            "site.yml",
        ],
        &cfg,
    )
    .unwrap();
    assert_eq!(
        (c.run.forks, c.inventory, c.run.connect.remote_user, c.mode),
        (
            3,
            vec!["hosts".to_string()],
            Some("me".into()),
            PlaybookMode::ListTasks
        )
    );
    let err = config(&["-f", "0", "site.yml"], &cfg).unwrap_err();
    assert!(err.to_string().contains("forks"), "{err}");
}

#[test]
fn the_default_host_list_is_read_only_when_it_exists() {
    let dir = tempfile::tempdir().unwrap();
    let hosts = dir.path().join("hosts");
    assert!(default_inventory(&hosts).is_empty());
    std::fs::write(&hosts, "h1\n").unwrap();
    assert_eq!(default_inventory(&hosts), [hosts.display().to_string()]);
}
