//! The tour's summary table of the shipped myths, full length, as a
//! snapshot: any change of a myth's verdict or figures shows up in review
//! (`cargo insta review`, or INSTA_UPDATE=always to accept); and no line
//! of the whole tour wider than 100 columns.

use fusionlab::tour::{TourArgs, shipped_myths, tour_of};

#[test]
fn tour_summary_table() {
    let (myths, broken) = shipped_myths();
    assert!(broken.is_empty(), "{broken:?}");
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = tour_of(myths, &TourArgs::default(), &mut out, &mut err).expect("the tour runs");
    let out = String::from_utf8(out).expect("utf-8");
    assert_eq!(code, 0, "{}", String::from_utf8_lossy(&err));
    // `fusionlab` (the tour) fits a 100-column terminal, summary included.
    let widest = out.lines().map(|l| l.chars().count()).max().unwrap_or(0);
    assert!(
        widest <= 100,
        "the widest line of the tour has {widest} characters:\n{}",
        out.lines()
            .find(|l| l.chars().count() == widest)
            .unwrap_or_default()
    );
    let summary = out
        .split_once("Tour summary\n")
        .map(|(_, s)| s)
        .expect("a summary");
    insta::assert_snapshot!(summary);
}
