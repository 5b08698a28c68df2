//! Topology parsing on canned sysfs trees (tests/fixtures/*/sys): a two-socket SMT server, a
//! hybrid P/E part, an Arm part described only by cpu_capacity, and a 2-CPU KVM guest (the
//! 2-CPU guest of docs/design.md).

use spinlab_lab::machine::topology::{format_cpu_list, GroupBy, Placement, Topology};
use std::path::PathBuf;

fn fixture(name: &str) -> Topology {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name).join("sys");
    Topology::read(&root).unwrap_or_else(|e| panic!("{name}: {e}"))
}

#[test]
fn two_socket_smt_server() {
    let t = fixture("two-socket-smt");
    assert_eq!(t.cpus.len(), 8);
    assert_eq!(t.packages(), 2);
    assert_eq!(t.threads_per_core(), 2);
    // core_id repeats across packages (0, 1 on each); sibling lists tell the cores apart.
    assert_eq!(t.cores, vec![vec![0, 4], vec![1, 5], vec![2, 6], vec![3, 7]]);
    assert_eq!(t.llcs.len(), 2);
    assert_eq!(t.llcs[0].level, 3);
    assert_eq!(t.llcs[0].cpus, vec![0, 1, 4, 5]);
    assert_eq!(t.llcs[0].size_bytes, Some(60 << 20));
    assert_eq!(t.nodes.iter().map(|n| format_cpu_list(&n.cpus)).collect::<Vec<_>>(), ["0-1,4-5", "2-3,6-7"]);
    assert!(t.core_classes.is_empty());

    assert_eq!(t.pair(Placement::SameCpu), Ok((0, 0)));
    assert_eq!(t.pair(Placement::Smt), Ok((0, 4)));
    assert_eq!(t.pair(Placement::Core), Ok((0, 1)));
    assert_eq!(t.pair(Placement::Node), Ok((0, 2)));
    // One L3 per socket: two different LLCs are always on two different nodes.
    let llc = t.pair(Placement::Llc).unwrap_err();
    assert!(llc.contains("each NUMA node has one last-level cache"), "{llc}");

    assert_eq!(t.relation(0, 4), Some(Placement::Smt));
    assert_eq!(t.relation(1, 4), Some(Placement::Core));
    assert_eq!(t.relation(1, 7), Some(Placement::Node));
    // Four threads at `core`: one per core of the first L3, round-robin.
    assert_eq!(t.cpus_for(Placement::Core, 4), Ok(vec![0, 1, 0, 1]));

    let groups = t.groups(GroupBy::Auto);
    assert_eq!(groups.len(), 2);
    assert!(groups[0].label.starts_with("node 0"));
    assert_eq!(Topology::spread_order(&groups), vec![0, 2, 1, 3, 4, 6, 5, 7]);
}

#[test]
fn hybrid_performance_and_efficiency_cores() {
    let t = fixture("hybrid-p-e");
    assert_eq!(t.core_classes.len(), 2);
    assert_eq!(t.core_classes[0].name, "performance");
    assert_eq!(t.core_classes[0].cpus, vec![0, 1, 2, 3]);
    assert_eq!(t.core_classes[1].name, "efficiency");
    assert_eq!(t.core_classes[1].cpus, vec![4, 5, 6, 7]);
    assert!(t.core_type_source.contains("cpu_core"));
    assert_eq!(t.cpus[5].core_type.as_deref(), Some("efficiency"));
    // P cores have two threads, E cores one: six cores in all.
    assert_eq!(t.cores.len(), 6);
    assert_eq!(t.threads_per_core(), 2);
    assert_eq!(t.pair(Placement::Smt), Ok((0, 1)));
    // The E cluster's shared L2 is not the last level; the L3 spans everything.
    assert_eq!(t.llcs.len(), 1);
    assert_eq!(t.llcs[0].cpus, (0..8).collect::<Vec<_>>());
    assert_eq!(t.pair(Placement::Core), Ok((0, 2)));
    assert!(t.pair(Placement::Llc).unwrap_err().starts_with("one last-level cache (L3 shared by CPUs 0-7)"));
    assert_eq!(t.pair(Placement::Node).unwrap_err(), "one NUMA node");
    // One node: groups are halves of the CPU list, labelled so.
    let groups = t.groups(GroupBy::Auto);
    assert!(groups[0].label.contains("first half") && groups[0].cpus == vec![0, 1, 2, 3]);
}

#[test]
fn arm_capacity_classes_and_no_node_directory() {
    let t = fixture("arm-capacity");
    assert_eq!(t.core_type_source, "cpu_capacity");
    assert_eq!(t.core_classes[0].name, "performance");
    assert_eq!(t.core_classes[0].cpus, vec![0, 1]);
    assert_eq!(t.core_classes[1].name, "efficiency (capacity 446)");
    // Each cluster's L2 is its last level: two LLCs on one (implied) node.
    assert_eq!(t.llcs.len(), 2);
    assert!(!t.nodes_from_os);
    assert_eq!(t.pair(Placement::Llc), Ok((0, 2)));
    assert_eq!(t.pair(Placement::Core), Ok((0, 1)));
    assert!(t.pair(Placement::Node).unwrap_err().contains("no NUMA nodes"));
    assert!(t.pair(Placement::Smt).unwrap_err().contains("no SMT"));
}

#[test]
fn this_machine_two_cpus_one_l3_no_smt() {
    let t = fixture("this-machine");
    assert_eq!(t.cpus.len(), 2);
    assert_eq!(t.threads_per_core(), 1);
    assert_eq!(t.pair(Placement::Core), Ok((0, 1)));
    assert_eq!(
        t.pair(Placement::Smt).unwrap_err(),
        "no SMT: every core has one logical CPU (smt/control: notsupported)"
    );
    assert_eq!(t.pair(Placement::Llc).unwrap_err(), "one last-level cache (L3 shared by CPUs 0-1)");
    assert_eq!(t.pair(Placement::Node).unwrap_err(), "one NUMA node");
    assert!(t.core_classes.is_empty());
    assert!(t.core_type_source.contains("cpu_capacity 1024"));
    let groups = t.groups(GroupBy::Auto);
    assert_eq!(groups.iter().map(|g| g.cpus.clone()).collect::<Vec<_>>(), vec![vec![0], vec![1]]);
}

#[test]
fn restricting_to_allowed_cpus_cuts_every_group() {
    let t = fixture("two-socket-smt").restrict(&[0, 4, 2]);
    assert_eq!(t.cpu_ids(), vec![0, 2, 4]);
    assert_eq!(t.cores, vec![vec![0, 4], vec![2]]);
    assert_eq!(t.nodes.len(), 2);
    assert_eq!(t.pair(Placement::Smt), Ok((0, 4)));
    assert!(t.pair(Placement::Core).is_err(), "0 and 4 are one core; 2 is alone under its L3");
}

#[test]
fn a_missing_tree_is_an_error_not_a_panic() {
    let err = Topology::read(std::path::Path::new("/nonexistent-sysfs")).unwrap_err();
    assert!(err.contains("no CPUs listed"), "{err}");
}
