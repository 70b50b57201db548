//! The HTML report (`run --html`, `tour --html`): one self-contained,
//! deterministic page, opened in headless Chromium, which must load it
//! without a console message and find its charts. Without a Chromium
//! binary (`chromium`, `chromium-browser`, `google-chrome`, or
//! `$FUSIONLAB_CHROMIUM`) the browser checks print a note and are skipped;
//! `.ci/run` installs Debian's `chromium` where it can.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use fusion_report::html::{HtmlOptions, run_page};
use fusionlab::tour::{TourArgs, shipped_myths, tour_of};
use fusionlab_tests::{CPU_STARVATION, run_clean, shipped_short};

/// A directory of its own under the system's temporary directory.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("fusionlab-html-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    dir
}

/// The Chromium to drive, if this machine has one.
fn chromium() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("FUSIONLAB_CHROMIUM") {
        return Some(PathBuf::from(p));
    }
    let path = std::env::var_os("PATH")?;
    ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .flat_map(|name| std::env::split_paths(&path).map(move |d| d.join(name)))
        .find(|p| p.is_file())
}

/// What headless Chromium made of a page: its DOM after loading, and the
/// console messages it logged.
struct Loaded {
    dom: String,
    console: Vec<String>,
}

/// Load `page` in headless Chromium (a fresh profile in `dir`), at most a
/// minute.
fn load(browser: &Path, page: &Path, dir: &Path) -> Loaded {
    let profile = dir.join("profile");
    let mut child = Command::new(browser)
        .args([
            "--headless",
            "--disable-gpu",
            "--no-sandbox",
            "--no-first-run",
            "--enable-logging=stderr",
            "--v=0",
            "--dump-dom",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("file://{}", page.display()))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}", browser.display()));
    let (mut out, mut err) = (child.stdout.take(), child.stderr.take());
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        if let Some(o) = out.as_mut() {
            let _ = std::io::Read::read_to_string(o, &mut s);
        }
        s
    });
    let err_reader = std::thread::spawn(move || {
        let mut s = String::new();
        if let Some(e) = err.as_mut() {
            let _ = std::io::Read::read_to_string(e, &mut s);
        }
        s
    });
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        match child.try_wait() {
            Ok(Some(status)) => {
                assert!(status.success(), "chromium exited with {status}");
                break;
            }
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(50)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("chromium did not finish loading {} in 60 s", page.display());
            }
        }
    }
    let dom = reader.join().expect("stdout read");
    let stderr = err_reader.join().expect("stderr read");
    // Chromium logs what a page writes to its console (errors included:
    // an uncaught exception, a resource that did not load) as `CONSOLE`.
    let console = stderr
        .lines()
        .filter(|l| l.contains(":CONSOLE"))
        .map(str::to_string)
        .collect();
    Loaded { dom, console }
}

/// What every page must be: whole, self-contained and free of script.
fn assert_self_contained(html: &str) {
    assert!(html.starts_with("<!DOCTYPE html>"), "not an HTML page");
    assert!(html.trim_end().ends_with("</html>"));
    for banned in [
        "<script", "<link", "<img", "src=", "@import", "url(", "https:",
    ] {
        assert!(
            !html.contains(banned),
            "the page holds `{banned}`: it must be self-contained"
        );
    }
    // The one `http:` is the SVG namespace, which is a name, not a fetch.
    assert_eq!(
        html.matches("http:").count(),
        html.matches("xmlns=\"http://www.w3.org/2000/svg\"").count()
    );
}

fn run_page_of_a_short_starvation_run() -> String {
    let loaded = shipped_short(CPU_STARVATION, 2.0, &[]);
    let (result, _) = run_clean(&loaded, None);
    let opts = HtmlOptions {
        names_9i: false,
        program: Some(fusionlab::run::report::program()),
    };
    run_page(&result, &loaded, &opts)
}

#[test]
fn the_run_report_is_one_deterministic_self_contained_page_with_its_charts() {
    let html = run_page_of_a_short_starvation_run();
    assert_eq!(html, run_page_of_a_short_starvation_run(), "deterministic");
    assert_self_contained(&html);
    // Six time-series charts, the cr and current decomposition, the wait classes.
    assert_eq!(html.matches("<svg").count(), 9, "charts");
    // The phases as bands and the faults as marks.
    assert!(html.contains("lms-normal-priority"));
    assert!(html.contains("stress_cpu inst2"));
    assert!(html.contains("_os_sched_high_priority = 0"));
    assert!(html.contains("REPRODUCED"));
    let dir = scratch("run");
    let page = dir.join("report.html");
    std::fs::write(&page, &html).expect("written");
    let Some(browser) = chromium() else {
        println!(
            "note: no chromium found (apt-get install chromium): the browser check is skipped"
        );
        return;
    };
    let loaded = load(&browser, &page, &dir);
    assert!(
        loaded.console.is_empty(),
        "console messages: {:#?}",
        loaded.console
    );
    assert_eq!(loaded.dom.matches("<svg").count(), 9, "charts in the DOM");
    assert!(loaded.dom.contains("<h1>myth-cpu-starvation</h1>"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_browser_check_sees_a_console_error() {
    let Some(browser) = chromium() else {
        println!(
            "note: no chromium found (apt-get install chromium): the browser check is skipped"
        );
        return;
    };
    let dir = scratch("broken");
    let page = dir.join("broken.html");
    std::fs::write(
        &page,
        "<!DOCTYPE html><html><body><svg></svg><script>nosuch();</script></body></html>",
    )
    .expect("written");
    let loaded = load(&browser, &page, &dir);
    assert_eq!(loaded.console.len(), 1, "{:#?}", loaded.console);
    assert!(loaded.console[0].contains("nosuch"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_tour_is_one_page_with_a_section_and_a_chart_per_myth() {
    let (myths, broken) = shipped_myths();
    assert!(broken.is_empty(), "{broken:?}");
    let names: Vec<String> = myths.iter().map(|m| m.name.clone()).collect();
    let short: Vec<_> = names.iter().map(|n| shipped_short(n, 1.0, &[])).collect();
    let dir = scratch("tour");
    let page = dir.join("tour.html");
    let args = TourArgs {
        html: Some(page.clone()),
        ..TourArgs::default()
    };
    let (mut out, mut err) = (Vec::new(), Vec::new());
    tour_of(short, &args, &mut out, &mut err).expect("the tour runs");
    let html = std::fs::read_to_string(&page).expect("the page was written");
    assert_self_contained(&html);
    for (k, name) in names.iter().enumerate() {
        assert!(
            html.contains(&format!("id=\"myth-{}\"", k + 1)),
            "a section per myth"
        );
        assert!(html.contains(name.as_str()));
    }
    assert_eq!(
        html.matches("class=\"headline\"").count(),
        names.len(),
        "a chart per myth"
    );
    let Some(browser) = chromium() else {
        println!(
            "note: no chromium found (apt-get install chromium): the browser check is skipped"
        );
        return;
    };
    let loaded = load(&browser, &page, &dir);
    assert!(
        loaded.console.is_empty(),
        "console messages: {:#?}",
        loaded.console
    );
    assert_eq!(
        loaded.dom.matches("<svg").count(),
        html.matches("<svg").count(),
        "every chart is in the DOM"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
