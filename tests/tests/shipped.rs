//! The shipped scenarios: every file in `scenarios/` is embedded, loads,
//! runs without protocol errors, names only figures both drivers measure,
//! and the tour orders are unique.

use std::path::Path;

use fusion_driver::measured::{Driver, Figure, TABLE};
use fusionlab::shipped;
use fusionlab_tests::{run_clean, shipped_short};

#[test]
fn every_file_is_embedded_and_current() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios");
    let mut on_disk: Vec<(String, String)> = std::fs::read_dir(&dir)
        .expect("scenarios/ is readable")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .map(|p| {
            let stem = p
                .file_stem()
                .and_then(|s| s.to_str())
                .unwrap_or_default()
                .to_string();
            let text = std::fs::read_to_string(&p).expect("readable");
            (stem, text)
        })
        .collect();
    on_disk.sort();
    let embedded: Vec<(String, String)> = shipped::all()
        .iter()
        .map(|s| (s.name.to_string(), s.text.to_string()))
        .collect();
    let names = |v: &[(String, String)]| v.iter().map(|x| x.0.clone()).collect::<Vec<_>>();
    assert_eq!(
        names(&embedded),
        names(&on_disk),
        "build.rs embeds every scenarios/*.toml"
    );
    assert!(
        embedded == on_disk,
        "an embedded scenario is stale (rebuild)"
    );
    assert!(!embedded.is_empty());
}

#[test]
fn every_shipped_scenario_loads_under_its_file_name() {
    for s in shipped::all() {
        let loaded = s.load(&[]).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(loaded.name, s.name, "[scenario] name matches the file name");
        assert!(!loaded.title.is_empty());
    }
}

#[test]
fn tour_orders_are_unique() {
    let mut seen: Vec<(u32, &str)> = Vec::new();
    for s in shipped::all() {
        let Ok(loaded) = s.load(&[]) else { continue };
        if let Some(t) = loaded.tour {
            if let Some((_, other)) = seen.iter().find(|(o, _)| *o == t.order) {
                panic!(
                    "{} and {other} both have [tour] order = {}",
                    s.name, t.order
                );
            }
            seen.push((t.order, s.name));
        }
    }
}

#[test]
fn every_shipped_scenario_reads_only_figures_both_drivers_measure() {
    for s in shipped::all() {
        let loaded = s.load(&[]).unwrap_or_else(|e| panic!("{e}"));
        for &d in Driver::ALL {
            if let Err(why) = fusion_driver::refusal(&loaded, d) {
                panic!("{why}");
            }
        }
    }
}

#[test]
fn every_shipped_scenario_runs_cleanly_and_briefly() {
    for s in shipped::all() {
        let loaded = shipped_short(s.name, 0.2, &[]);
        let (result, outcomes) = run_clean(&loaded, None);
        for o in &outcomes {
            assert!(o.events() > 0, "{}: nothing happened", s.name);
            // What the table of measured figures says nothing counts is 0
            // everywhere: a figure counted since must leave the table.
            for p in &o.result.phases {
                for x in &p.instances {
                    for e in TABLE.iter().filter(|e| e.measured_by.is_empty()) {
                        let v = match e.figure {
                            Figure::Stat(st) => x.stats.get(st),
                            Figure::Wait(w) => x.stats.event(w).waits,
                        };
                        assert_eq!(v, 0, "{}: {:?} is counted now", s.name, e.figure);
                    }
                }
            }
        }
        assert_eq!(result.verdicts.is_empty(), loaded.expectations.is_empty());
        if let Some(t) = &loaded.tour {
            // The tour figure names a place that is in the run.
            let v = result
                .variants
                .iter()
                .find(|v| Some(&v.name) == t.measured.variant.as_ref())
                .expect("the tour's variant ran");
            let p = v.phase(&t.measured.phase).expect("the tour's phase ran");
            if let Some(i) = t.measured.instance {
                assert!(p.instance(i).is_some(), "{}: instance {i} ran", s.name);
            }
        }
    }
}
