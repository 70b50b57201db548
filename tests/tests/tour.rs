//! The myth tour on shortened copies of the shipped scenarios.

use fusion_scenario::LoadedScenario;
use fusionlab::shipped;
use fusionlab::tour::{TourArgs, sort_myths, tour_of};
use fusionlab_tests::load_short;

/// Every shipped scenario, shortened, with a `[tour]` section (its own, or
/// one added on its first expectation's figure); tour order reversed from
/// file order so the test sees the sorting.
fn myths() -> Vec<LoadedScenario> {
    let all = shipped::all();
    let mut out = Vec::new();
    for (i, s) in all.iter().enumerate() {
        let own = s.load(&[]).unwrap_or_else(|e| panic!("{e}"));
        let mut text = s.text.to_string();
        let mut extra = Vec::new();
        let order = all.len() - i;
        if own.tour.is_some() {
            extra.push(format!("tour.order={order}"));
        } else {
            let (phase, instance) = own
                .expectations
                .first()
                .map(|e| (e.left.phase.clone(), e.left.instance))
                .unwrap_or_else(|| (own.variants[0].scenario.phases[0].name.clone(), None));
            let instance = instance.map_or("\"all\"".to_string(), |i| i.to_string());
            text.push_str(&format!(
                "\n[tour]\norder = {order}\nmeasured = {{ metric = \"stat:gc cr blocks received\", phase = {phase:?}, instance = {instance} }}\nlabel = \"test label {}\"\ndeck = \"deck figure {}\"\n",
                s.name, s.name
            ));
        }
        let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
        out.push(load_short(&text, &s.label(), 0.2, &extra));
    }
    sort_myths(&mut out);
    out
}

fn tour(args: &TourArgs) -> (u8, String, String) {
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = tour_of(myths(), args, &mut out, &mut err).expect("the tour runs");
    (
        code,
        String::from_utf8(out).expect("utf-8"),
        String::from_utf8(err).expect("utf-8"),
    )
}

/// Runs of spaces and line breaks as one space: a text wrapped at 100
/// columns reads as the unwrapped one.
fn flat(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[test]
fn a_block_per_myth_in_tour_order_then_the_summary() {
    let (code, out, err) = tour(&TourArgs::default());
    assert_eq!(code, 0, "{err}");
    assert_eq!(err, "");
    // Every scenario's block fits a 100-column terminal.
    for line in out.lines() {
        assert!(
            line.chars().count() <= 100,
            "wider than 100 columns:\n{line}"
        );
    }
    let out = flat(&out);
    let myths = myths();
    assert!(out.starts_with(&format!("Fusionlab myth tour: {} myth", myths.len())));
    let mut last = 0;
    for (n, m) in myths.iter().enumerate() {
        let claim = m.myth.as_deref().unwrap_or(&m.title);
        let head = flat(&format!("Myth {} of {}: {claim}", n + 1, myths.len()));
        let at = out
            .find(&head)
            .unwrap_or_else(|| panic!("no `{head}` in:\n{out}"));
        assert!(at >= last, "myths out of tour order:\n{out}");
        last = at;
        let block = &out[at..];
        assert!(block.contains(&flat(&format!("{}: {}", m.name, m.title))));
        for e in &m.expectations {
            assert!(
                block.contains(&flat(&e.name)),
                "expectation `{}` not shown",
                e.name
            );
        }
        let phase = &m.variants[0].scenario.phases[0].name;
        assert!(block.contains(phase.as_str()), "phase `{phase}` not shown");
        let tour = m.tour.as_ref().expect("every test myth has a [tour]");
        assert!(
            out.contains(&flat(&tour.deck)),
            "deck figure missing:\n{out}"
        );
        assert!(out.contains(&flat(&tour.label)), "label missing:\n{out}");
    }
    assert!(out.contains("gc cr") && out.contains("recv ms"));
    assert!(out.contains("Top foreground wait"));
    assert_eq!(
        out.matches(" VERDICT: ").count(),
        myths.len(),
        "one verdict per myth:\n{out}"
    );
    let summary = out.find("Tour summary").expect("a summary");
    assert!(summary > last);
    assert!(out.contains("myths reproduced "));
    assert!(out.contains(" seeds: "), "the seeds are printed:\n{out}");
}

#[test]
fn the_tour_is_deterministic_and_takes_a_seed() {
    let (_, a, _) = tour(&TourArgs::default());
    let (_, b, _) = tour(&TourArgs::default());
    assert!(a == b, "two tours differ");
    let (code, c, _) = tour(&TourArgs {
        names_9i: false,
        seed: Some(5),
        ..TourArgs::default()
    });
    assert_eq!(code, 0);
    let program = fusionlab::run::report::program();
    assert!(
        c.contains(&format!("seed: 5 for every myth (--seed; {program})")),
        "{c}"
    );
    assert_ne!(a, c);
}

#[test]
fn the_tour_in_9i_names() {
    let (code, out, _) = tour(&TourArgs {
        names_9i: true,
        seed: None,
        ..TourArgs::default()
    });
    assert_eq!(code, 0);
    for modern in [
        "gc cr block 2-way",
        "gc cr block 3-way",
        "gc current block 2-way",
    ] {
        assert!(!out.contains(modern), "`{modern}` in the 9i tour:\n{out}");
    }
}

#[test]
fn no_myth_is_an_empty_tour() {
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = tour_of(Vec::new(), &TourArgs::default(), &mut out, &mut err).expect("runs");
    let out = String::from_utf8(out).expect("utf-8");
    assert_eq!(code, 0);
    assert!(out.contains("no shipped scenario has a [tour] section"));
    assert!(out.contains("0 of 0 myths reproduced"));
}

/// The second part, inside one node, on shortened copies of its shipped
/// scenarios: every line of it fits 100 columns too (the papers' figures
/// are long), and its summary counts every scenario.
#[test]
fn the_node_part_fits_100_columns() {
    use fusion_scenario::TourPart;
    let node: Vec<LoadedScenario> = shipped::all()
        .iter()
        .filter(|s| {
            s.load(&[])
                .ok()
                .and_then(|l| l.tour)
                .is_some_and(|t| t.part == TourPart::Node)
        })
        .map(|s| load_short(s.text, &s.label(), 0.2, &[]))
        .collect();
    assert!(node.len() >= 7, "{} node scenarios", node.len());
    let (mut out, mut err) = (Vec::new(), Vec::new());
    fusionlab::tour::node_tour_of(node, &TourArgs::default(), &mut out, &mut err)
        .expect("the node part runs");
    let out = String::from_utf8(out).expect("utf-8");
    for line in out.lines() {
        assert!(
            line.chars().count() <= 100,
            "wider than 100 columns:\n{line}"
        );
    }
    assert!(out.contains("Inside one node: summary"), "{out}");
}
