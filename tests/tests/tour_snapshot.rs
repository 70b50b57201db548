//! The tour's summary table of the shipped myths, full length, as a
//! snapshot: any change of a myth's verdict or figures shows up in review
//! (`cargo insta review`, or INSTA_UPDATE=always to accept).

use fusionlab::tour::{TourArgs, shipped_myths, tour_of};

#[test]
fn tour_summary_table() {
    let (myths, broken) = shipped_myths();
    assert!(broken.is_empty(), "{broken:?}");
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = tour_of(myths, &TourArgs::default(), &mut out, &mut err).expect("the tour runs");
    let out = String::from_utf8(out).expect("utf-8");
    assert_eq!(code, 0, "{}", String::from_utf8_lossy(&err));
    let summary = out
        .split_once("Tour summary\n")
        .map(|(_, s)| s)
        .expect("a summary");
    insta::assert_snapshot!(summary);
}
