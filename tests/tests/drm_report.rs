//! The run report shows `V$GCSPFMASTER_INFO` at the end of each phase once
//! dynamic remastering moved an object, and nothing of it otherwise.

use fusion_report::{PfMasterRow, TextOptions, render, to_json};
use fusionlab_tests::{run_clean, shipped_with};

fn row(object: &str, pkey: u32) -> PfMasterRow {
    // Instance 2 is master 1 (Oracle's view numbers from 0); before, the hash.
    PfMasterRow {
        object: object.to_string(),
        pkey,
        current_master: 1,
        previous_master: None,
        remaster_count: 1,
    }
}

#[test]
fn drm_affinity_reports_the_objects_remastered_to_the_batchs_instance() {
    let loaded = shipped_with("drm-affinity", &["phase.after.duration_s=0.2"]);
    let (r, _) = run_clean(&loaded, None);
    let drm = &r.variants[0];
    assert_eq!(drm.name, "drm");
    let rows = |phase: &str| drm.phase(phase).expect("the phase ran").pf_masters.clone();
    assert_eq!(rows("before"), vec![], "nothing moves in the first window");
    assert_eq!(
        rows("remaster"),
        vec![row("t_batch", 0), row("t_batch_pk", 1)]
    );
    assert_eq!(rows("after"), rows("remaster"));
    let off = &r.variants[1];
    assert!(off.phases.iter().all(|p| p.pf_masters.is_empty()));

    let text = render(&r, &TextOptions::default());
    assert_eq!(
        text.matches("V$GCSPFMASTER_INFO").count(),
        2,
        "the drm variant's remaster and after phases: {text}"
    );
    assert!(
        text.lines()
            .any(|l| l.split_whitespace().eq(["t_batch", "0", "1", "32767", "1"])),
        "{text}"
    );
    let json = to_json(&r);
    let phase = &json["variants"][0]["phases"][2];
    assert_eq!(phase["name"], "after");
    assert_eq!(phase["gcspfmaster_info"][1]["object"], "t_batch_pk");
    assert_eq!(phase["gcspfmaster_info"][1]["current_master"], 1);
    assert!(phase["gcspfmaster_info"][1]["previous_master"].is_null());
    assert!(
        json["variants"][1]["phases"][2]
            .get("gcspfmaster_info")
            .is_none()
    );
}
