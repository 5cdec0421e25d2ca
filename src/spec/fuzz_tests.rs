//! Property tests: no input makes a parser (or the expansion behind it) panic. Strings come
//! both from arbitrary Unicode and from the characters the notations are made of, so the
//! generated inputs also reach the deeper branches of the bracket, YAML and spec parsers.

use std::path::Path;

use proptest::prelude::*;

use super::*;
use crate::vars::VarMap;

/// Strings over the notations' own alphabet.
fn notation() -> impl Strategy<Value = String> {
    proptest::string::string_regex(
        r#"[\[\]{}=,:"' \-_.*/@a-z0-9KMGTiB\n]{0,60}|\[\[(when_(group|name|type|distro)=[a-z_\-0-9\[\]*]{0,12},?|(os|ram|disk|vcpus|maxvcpus|target_order)=[a-z0-9GiMB\[\],\-]{0,12},?){0,4}\]{0,3}"#,
    )
    .expect("valid regex")
}

fn spec_string() -> impl Strategy<Value = String> {
    proptest::string::string_regex(r"(k8s|okd|x)?-?(libvirt)?-?[0-9+\-]{0,12}[a-z]?")
        .expect("valid regex")
}

fn any_input() -> impl Strategy<Value = String> {
    prop_oneof![any::<String>(), notation()]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn parsers_never_panic(text in any_input()) {
        let _ = Shape::parse(&text);
        let _ = Size::parse(&text);
        let _ = parse_structured(&text);
        let _ = parse_node_rules(&text);
        let _ = parse_hypervisor_hosts_spec(&text);
        let _ = parse_hypervisor_hosts(&text);
        let _ = parse_network_spec(&text);
        let _ = parse_cluster_spec(Some(&text), "k8scluster");
        let _ = crate::extra_vars::parse_one(&text, 1, Path::new("."));
    }

    #[test]
    fn spec_and_expansion_never_panic(
        spec in spec_string(),
        rules in any_input(),
        hosts in any_input(),
        network in any_input(),
    ) {
        for (rules, hosts, network) in [
            (Some(rules.as_str()), None, None),
            (None, Some(hosts.as_str()), None),
            (None, None, Some(network.as_str())),
        ] {
            let inputs = SpecInputs {
                spec: &spec,
                cluster_nodes_spec: rules,
                hypervisor_hosts_spec: hosts,
                network_spec: network,
                ..SpecInputs::default()
            };
            if let Ok(s) = ClusterSpec::from_inputs(&inputs, &VarMap::new()) {
                let _ = crate::cluster::expand(&s);
            }
        }
    }

    #[test]
    fn rules_on_a_valid_spec_expand_or_fail_cleanly(rules in notation()) {
        let inputs = SpecInputs {
            spec: "k8s-libvirt-3-3-2",
            cluster_nodes_spec: Some(&rules),
            ..SpecInputs::default()
        };
        if let Ok(s) = ClusterSpec::from_inputs(&inputs, &VarMap::new())
            && let Ok(c) = crate::cluster::expand(&s)
        {
            prop_assert_eq!(c.nodes.len(), 7);
        }
    }
}
