use super::*;
use rand_core::SeedableRng;

/// Outputs that go nowhere (the peers are not there).
struct Nowhere;

impl Outputs for Nowhere {
    fn send(&mut self, _: Envelope) {}
    fn flush(&mut self) {}
    fn io(&mut self, _: u64, _: Io) {}
}

const TWO_BUSY_INSTANCES: &str = "[scenario]\nname = \"busy\"\ntitle = \"busy\"\n\
    [cluster]\ninstances = 2\n[[table]]\nname = \"t\"\nrows = 2000\nrows_per_block = 20\n\
    [[index]]\nname = \"t_pk\"\ntable = \"t\"\n[[workload]]\nname = \"w\"\ninstances = \"all\"\n\
    sessions_per_instance = 8\nthink_time_ms = 1\n[[workload.transaction]]\nname = \"u\"\n\
    steps = [{ op = \"update\", table = \"t\", via = \"t_pk\", keys = \"hot\" }, { op = \"commit\" }]\n\
    [[phase]]\nname = \"p\"\nduration_s = 1\n";

/// A host loaded seconds into its run (as on a cluster that ran a
/// scenario before: the last host is stopped and the store formatted
/// after the runner chose the run's clock origin) finds every session's
/// first wake-up long due. None may run before the runner begins the
/// first phase: the peers may not be loaded yet. (Holding the sessions
/// at the clock's time instead of 0 let them run first: on a reused
/// cluster the second scenario's instances then stopped answering the
/// runner's first `BeginPhase` in time.)
#[test]
fn a_host_loaded_late_in_its_run_keeps_its_sessions_idle_until_the_first_phase() {
    let loaded = fusion_scenario::load_str(TWO_BUSY_INSTANCES, "busy.toml", &[]).expect("loads");
    let scenario = &loaded.variants[0].scenario;
    let layout = scenario.layout();
    let cfg = scenario.instance_configs(&layout, 1, false).swap_remove(0);
    let clock = Clock::new(crate::clock::monotonic_ns().saturating_sub(5_000_000_000));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        let net = Interconnect::new(
            scenario.network.clone(),
            2,
            rand_chacha::ChaCha8Rng::seed_from_u64(1),
        );
        let task = spawn(
            Instance::new(cfg),
            clock,
            Nowhere,
            rx,
            net,
            None,
            tracing::Span::none(),
        )
        .expect("host");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        let (reply, status) = tokio::sync::oneshot::channel();
        tx.send(Input::Query(Query::Status(reply)))
            .expect("host runs");
        let status = status.await.expect("host answers");
        assert_eq!(status.active_sessions, 0, "{:?}", status.waits);
        tx.send(Input::Stop).expect("host runs");
        task.await.expect("host stops");
    });
}
