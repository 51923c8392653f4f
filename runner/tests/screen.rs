//! `atomcts fuzz` screens out drawn cases an adapter declares it cannot run (issue 31 point 2):
//! they are drawn again, counted by reason, and never judged. The screen is attacked like any
//! other answer: one that screens everything ends the campaign with exit 2 (nothing checked),
//! one that hides a case the adapter runs is caught by `--audit-screen`, and an honest screen
//! leaves every case it lets through judged. With drivers installed (CI runs these with
//! `--ignored`), the real back ends' screens pass the audit.

mod common;
use atomcts::exit::{EXIT_ERROR, EXIT_NONCONFORMANCE, EXIT_OK};
use atomcts::fuzzing::fuzz::{FuzzOptions, SCREEN_GIVE_UP, Stop, Summary, fuzz};
use atomcts::run::results::Options;
use atomcts_adapters::{
    Adapter, AdapterError, AdapterErrorKind, Observation, ReferenceAdapter, Request,
};
use atomcts_reference::Profile;
use atomcts_reference::program::Dialect;
use atomcts_reference::race::DEFAULT_BUDGET;
use common::{atomcts_env, text};

/// How the test adapter screens and runs: the reference's answers, except where told.
#[derive(Clone, Copy, PartialEq)]
enum Mode {
    /// Screens every case out.
    ScreensAll,
    /// Screens MSL cases out but runs them (a lying screen).
    HidesMsl,
    /// Screens MSL cases out and answers them not applicable (an honest screen).
    RefusesMsl,
}

struct Screening(Mode, ReferenceAdapter);

impl Adapter for Screening {
    fn name(&self) -> &str {
        "screening"
    }
    fn supports(&self, capability: &str) -> bool {
        self.1.supports(capability)
    }
    fn run(&mut self, r: &Request<'_>) -> Result<Observation, AdapterError> {
        if self.0 == Mode::RefusesMsl && r.dialect == Dialect::Msl {
            return Err(AdapterError {
                adapter: "screening".into(),
                kind: AdapterErrorKind::NotApplicable("no MSL here".into()),
            });
        }
        self.1.run(r)
    }
    fn screen(&mut self, r: &Request<'_>) -> Option<String> {
        match self.0 {
            Mode::ScreensAll => Some("nothing runs here".into()),
            Mode::HidesMsl | Mode::RefusesMsl => {
                (r.dialect == Dialect::Msl).then(|| "no MSL here".into())
            }
        }
    }
}

fn campaign(mode: Mode, cases: u64, screen: bool, audit: bool) -> Summary {
    campaign_learning(mode, cases, screen, audit, true)
}

fn campaign_learning(mode: Mode, cases: u64, screen: bool, audit: bool, learn: bool) -> Summary {
    let mut a = Screening(mode, ReferenceAdapter);
    let run_opts = Options {
        profile: Profile::default(),
        race_budget: DEFAULT_BUDGET,
        cases_arg: String::new(),
        adapter_arg: String::new(),
    };
    let opts = FuzzOptions {
        seed: 11,
        cases: Some(cases),
        time: None,
        // One folder per campaign: the tests run in parallel.
        out: common::tmp(&format!(
            "screen-findings-{}-{cases}-{screen}-{audit}",
            mode as u8
        )),
        repro_sides: vec![String::new()],
        command: "atomcts fuzz (test)".into(),
        stop: None,
        screen,
        learn,
        audit_screen: audit,
    };
    fuzz(&mut a, None, &run_opts, &opts, &mut |_| {})
}

#[test]
fn a_screen_that_refuses_everything_stops_the_campaign_with_nothing_checked() {
    let s = campaign(Mode::ScreensAll, 50, true, false);
    assert_eq!(s.cases, 0);
    assert_eq!(s.judged, 0);
    assert_eq!(s.screened, SCREEN_GIVE_UP);
    assert!(
        // The last one screened: the adapter's reason, or the runner's for a concurrent case
        // (learning passes over the shapes seen, so the last one made may be either).
        matches!(&s.stop, Some(Stop::Unrunnable(why))
            if why == "nothing runs here" || why.ends_with("does not run concurrent cases")),
        "{:?}",
        s.stop
    );
    assert_eq!(s.exit_code(), EXIT_ERROR);
}

#[test]
fn an_honest_screen_leaves_only_cases_that_are_judged() {
    let screened = campaign(Mode::RefusesMsl, 400, true, true);
    assert_eq!(screened.cases, 400, "--cases counts the cases sent");
    assert!(screened.screened > 0);
    // Every screened case was sent anyway (the audit) and answered not applicable.
    assert_eq!(screened.audited, screened.screened);
    assert!(screened.problems.is_empty(), "{:?}", screened.problems);
    assert_eq!(screened.not_applicable, 0);
    assert_eq!(screened.judged + screened.errors, 400);
    assert_eq!(screened.exit_code(), EXIT_OK);
    // Concurrent cases on an adapter that runs none are screened with the runner's reason.
    assert!(
        screened
            .screened_by
            .keys()
            .any(|k| k.contains("does not run concurrent cases")),
        "{:?}",
        screened.screened_by
    );
    assert_eq!(
        screened.screened_by.values().sum::<u64>(),
        screened.screened
    );
    // The same stream unscreened sends the MSL cases and gets them back not applicable.
    let all = campaign(Mode::RefusesMsl, 400, false, false);
    assert_eq!(all.screened, 0);
    assert!(all.not_applicable > 0);
    assert!(all.judged < screened.judged);
}

#[test]
fn a_screen_that_hides_cases_the_adapter_runs_is_caught_by_the_audit() {
    let s = campaign(Mode::HidesMsl, 200, true, true);
    assert!(s.screened > 0);
    assert!(!s.problems.is_empty());
    assert!(
        s.problems
            .iter()
            .all(|p| p.contains("screened out (no MSL here), but adapter screening answered")),
        "{:?}",
        s.problems
    );
    assert_eq!(s.exit_code(), EXIT_ERROR);
    // Without the audit the lie is not seen, which is why the audit exists (and CI runs it
    // on every real back end below).
    let quiet = campaign(Mode::HidesMsl, 200, true, false);
    assert!(quiet.problems.is_empty());
}

/// `--audit-screen` and `--no-learn` need the screen: with `--no-screen`, exit 2.
#[test]
fn flags_that_need_the_screen_conflict_with_no_screen() {
    for flag in ["--audit-screen", "--no-learn"] {
        let o = atomcts_env(
            &[
                "fuzz",
                "--adapter",
                "reference",
                "--cases",
                "5",
                "--no-screen",
                flag,
            ],
            &[],
        );
        assert_eq!(o.status.code(), Some(2), "{flag}: {}", text(&o));
        assert!(
            text(&o).contains("cannot be used with"),
            "{flag}: {}",
            text(&o)
        );
    }
}

/// Known findings a fuzzing campaign may meet, by adapter, as a test of a signature line
/// (`  sass concurrent:ATOM.XOR+ATOM.MAX fail global,... x1 (...)`).
type Known = (&'static str, fn(&str) -> bool);
const KNOWN: &[Known] = &[
    // swiftshader-1 (docs/findings.md): min and max are atomic against their own kind only,
    // so a concurrent case where one meets another kind of atomic loses updates in some runs.
    ("vulkan:swiftshader", |l| {
        let Some(ops) = l
            .split_whitespace()
            .nth(1)
            .and_then(|w| w.strip_prefix("concurrent:"))
        else {
            return false;
        };
        let ops: Vec<&str> = ops.split('+').collect();
        let minmax = |o: &&str| {
            let o = o.to_ascii_lowercase();
            o.contains("min") || o.contains("max")
        };
        ops.iter().any(minmax) && !ops.iter().all(|o| *o == ops[0])
    }),
];

/// The real back ends' screens, audited: every screened case is answered not applicable, and
/// every case sent is judged.
#[test]
#[ignore = "needs lavapipe, SwiftShader and the OpenCL drivers (tools/install-implementations.sh); CI runs it"]
fn the_back_ends_screens_pass_the_audit() {
    for adapter in [
        "vulkan:lavapipe",
        "wgsl-naga:lavapipe",
        "vulkan:swiftshader",
        "opencl:pocl",
        "opencl:rusticl",
        "opencl:oclgrind",
    ] {
        let out = common::tmp(&format!("screen-{}", adapter.replace(':', "-")));
        let o = atomcts_env(
            &[
                "fuzz",
                "--adapter",
                adapter,
                "--profile",
                "claimed",
                "--cases",
                "300",
                "--seed",
                "4",
                "--no-progress",
                "--audit-screen",
                "--out",
                out.to_str().expect("utf-8 path"),
            ],
            &[],
        );
        let t = text(&o);
        // A failing signature is the driver's, and fails the test, unless it is a known finding
        // of that driver: then the campaign exits 1 and each of its signatures is one.
        let signatures: Vec<&str> = t.lines().filter(|l| l.contains(" fail ")).collect();
        let known = |l: &&str| KNOWN.iter().any(|(a, is)| *a == adapter && is(l));
        if o.status.code() == Some(i32::from(EXIT_NONCONFORMANCE))
            && !signatures.is_empty()
            && signatures.iter().all(known)
        {
            assert!(t.contains(" 0 error(s), 0 undecided"), "{adapter}: {t}");
        } else {
            assert_eq!(o.status.code(), Some(0), "{adapter}: {t}");
        }
        assert!(
            t.contains("300 cases in") && t.contains(": 300 judged,"),
            "{adapter}: {t}"
        );
        assert!(
            t.contains("screened out before they were sent"),
            "{adapter}: {t}"
        );
        assert!(t.contains("audit: "), "{adapter}: {t}");
        // The campaign learns what the screen turns away: most of what it makes is judged.
        let made = t
            .lines()
            .find(|l| l.contains("of those made were judged"))
            .unwrap_or_else(|| panic!("{adapter}: {t}"));
        assert!(t.contains("passed over, not made"), "{adapter}: {t}");
        let _ = made;
        // What the driver built: some programs, fewer than the cases (300 cases come in far
        // fewer shapes; a batched launch runs many cases of one).
        let what = if adapter.starts_with("opencl") {
            "programs"
        } else {
            "pipelines"
        };
        let line = t
            .lines()
            .find(|l| l.starts_with(&format!("{adapter}: ")) && l.contains("built by the driver"))
            .unwrap_or_else(|| panic!("{adapter}: no builds line: {t}"));
        let words: Vec<&str> = line.split_whitespace().collect();
        let built: u64 = words[1].parse().expect(line);
        let _reused: u64 = words[7].parse().expect(line);
        assert_eq!(words[2], what, "{line}");
        assert!((1..300).contains(&built), "{line}");
    }
}

/// Issue 31 point 2: the campaign learns the shapes its screen only turns away (here every MSL
/// shape) and stops making them, but for one draft in `EXPLORE_EVERY`; the cases sent are
/// the same kind (all judged), and the share of the cases made that are judged goes up.
#[test]
fn a_campaign_passes_over_shapes_its_screen_only_turns_away() {
    use atomcts::fuzzing::learn::{EXPLORE_EVERY, LEARN_AFTER};
    let learning = campaign_learning(Mode::RefusesMsl, 2000, true, false, true);
    let every = campaign_learning(Mode::RefusesMsl, 2000, true, false, false);
    for s in [&learning, &every] {
        assert_eq!(s.cases, 2000);
        assert_eq!(s.judged + s.errors, 2000, "{s:?}");
        assert!(s.problems.is_empty(), "{:?}", s.problems);
    }
    assert_eq!(every.passed_over, 0);
    assert!(learning.passed_over > 0 && learning.passed_over_shapes > 0);
    // A shape is passed over only once it was screened LEARN_AFTER times; then one draft in
    // EXPLORE_EVERY is still made: the screened cases are far fewer than without learning,
    // but never none.
    assert!(
        learning.screened < every.screened / 2,
        "{} screened learning, {} without",
        learning.screened,
        every.screened
    );
    assert!(learning.screened >= u64::from(LEARN_AFTER), "{learning:?}");
    assert!(
        learning.passed_over > u64::from(EXPLORE_EVERY),
        "{learning:?}"
    );
    let share = |s: &Summary| s.judged as f64 / (s.cases + s.screened) as f64;
    assert!(share(&learning) > 0.8, "{}", share(&learning));
    assert!(share(&every) < share(&learning));
    // The audit still sees every screened case: a lying screen is caught with learning on.
    let lying = campaign_learning(Mode::HidesMsl, 300, true, true, true);
    assert!(!lying.problems.is_empty());
    assert_eq!(lying.exit_code(), EXIT_ERROR);
}
