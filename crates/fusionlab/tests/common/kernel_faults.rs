//! What a run of `tests/live/kernel_faults.toml` must show wherever each
//! instance has a network namespace of its own (containers, hosts made of
//! namespaces): each network fault on inst2's links carried out as the
//! kernel allows, the alert log saying how, and each one's effect.

use serde_json::Value;

/// The scenario.
pub fn scenario() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/live/kernel_faults.toml")
}

fn phase<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["phases"]
        .as_array()
        .and_then(|p| p.iter().find(|p| p["name"] == name))
        .unwrap_or_else(|| panic!("no phase {name}"))
}

/// Instance `id`'s average wire time per CR block received in `phase`, ms.
fn wire_ms(phase: &Value, id: u64) -> f64 {
    let i = phase["instances"]
        .as_array()
        .and_then(|v| v.iter().find(|i| i["id"] == id))
        .expect("instance");
    let s = &i["sysstat"];
    let wire_us = s["fusionlab gc cr receive: wire time"]
        .as_f64()
        .unwrap_or(0.0);
    let blocks = s["gc cr blocks received"].as_f64().unwrap_or(0.0);
    wire_us / 1e3 / blocks.max(1.0)
}

/// The alert log line of `phase` that carries out its network fault.
fn fault_line(phase: &Value) -> String {
    phase["alert_log"]
        .as_array()
        .and_then(|l| {
            l.iter()
                .filter_map(|a| a["line"].as_str())
                .find(|l| l.contains("on inst2's links"))
        })
        .unwrap_or_else(|| panic!("no fault line in {}: {phase:#}", phase["name"]))
        .to_string()
}

/// `RetransSegs` of a namespace's `/proc/net/snmp`.
pub fn retransmitted_segments(snmp: &str) -> u64 {
    let tcp: Vec<Vec<&str>> = snmp
        .lines()
        .filter(|l| l.starts_with("Tcp:"))
        .map(|l| l.split_whitespace().collect())
        .collect();
    let [names, values] = tcp.as_slice() else {
        panic!("no Tcp lines in {snmp}");
    };
    names
        .iter()
        .position(|&n| n == "RetransSegs")
        .and_then(|k| values.get(k))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no RetransSegs in {snmp}"))
}

/// Check the JSON report of a `--check`ed run of [`scenario`], its stderr,
/// and `/proc/net/snmp` of inst2's namespace after it.
pub fn check_report(report: &Value, stderr: &str, inst2_snmp: &str) {
    // One cluster: blocks crossed between all of them, and the scenario
    // reached its verdict.
    let base = phase(report, "base");
    for id in 1..=3 {
        assert!(wire_ms(base, id) > 0.0, "inst{id} received no CR block");
    }
    assert_eq!(report["reproduced"], true, "{:#}", report["verdicts"]);

    // How each fault was carried out: what the kernel offers decides.
    let offers =
        fusion_live::netfault::offers().expect("the kernel is probed where namespaces are made");
    let narrow = phase(report, "narrow-inst2");
    let line = fault_line(narrow);
    if offers.tbf && offers.htb_u32 {
        assert!(
            line.ends_with(
                "tc tbf in the network namespaces of inst1, inst2, inst3 (at each sender)"
            ),
            "{line}"
        );
    } else {
        assert!(line.contains(": by the instances ("), "{line}");
    }
    assert!(
        wire_ms(narrow, 1) > 3.0 * wire_ms(base, 1),
        "inst1 wire {:.3} ms with inst2's links at 4 Mbit/s, {:.3} ms before",
        wire_ms(narrow, 1),
        wire_ms(base, 1)
    );

    // The loss: dropped by the kernel, resent by TCP; nothing lost, nothing
    // broken (the checkers), the work went on.
    let lossy = phase(report, "lossy-inst2");
    let line = fault_line(lossy);
    if offers.netem && offers.htb_u32 {
        assert!(
            line.contains(": tc netem in the network namespaces"),
            "{line}"
        );
    } else if offers.iptables_statistic {
        assert!(
            line.ends_with(
                "iptables statistic DROP in the network namespaces of inst1, inst2, inst3 \
                 (at each receiver's INPUT)"
            ),
            "{line}"
        );
    }
    // Nothing lost: TCP sent again what the kernel dropped (a block late
    // by more than 500 ms still counts as `gc blocks lost`, the wait's
    // name, and is asked for again), the checkers found every
    // acknowledged commit and every read consistent, nobody was evicted,
    // and the work went on.
    if !line.contains(": by the instances (") {
        let resent = retransmitted_segments(inst2_snmp);
        assert!(resent > 0, "inst2's TCP sent nothing again:\n{inst2_snmp}");
    }
    assert!(stderr.contains(": no violation"), "{stderr}");
    assert!(
        !stderr.contains(" lost,") || stderr.contains(" 0 lost,"),
        "{stderr}"
    );
    let evicted = lossy["alert_log"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|a| a["line"].as_str())
        .find(|l| l.contains("Evicting"));
    assert_eq!(evicted, None);
    for i in lossy["instances"].as_array().expect("instances") {
        assert!(
            i["sysstat"]["user commits"].as_u64().unwrap_or(0) > 0,
            "inst{} committed nothing under the loss",
            i["id"]
        );
    }

    // The delay: the kernel's where it has netem, else the instances'; as
    // wire time at inst1 either way.
    let slow = phase(report, "slow-inst2");
    let line = fault_line(slow);
    if offers.netem && offers.htb_u32 {
        assert!(
            line.ends_with(
                "tc netem in the network namespaces of inst1, inst2, inst3 (at each sender)"
            ),
            "{line}"
        );
    } else {
        println!("skipped: the 20 ms delay by the kernel (this kernel has no sch_netem): {line}");
        assert!(
            line.ends_with(": by the instances (this kernel has no sch_netem)"),
            "{line}"
        );
    }
    assert!(
        wire_ms(slow, 1) > 5.0 * wire_ms(base, 1),
        "inst1 wire {:.3} ms with 20 ms on inst2's links, {:.3} ms before",
        wire_ms(slow, 1),
        wire_ms(base, 1)
    );
}
