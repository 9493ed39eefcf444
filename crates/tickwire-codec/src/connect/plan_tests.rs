//! The plan on a virtual clock: stagger, failure-triggered starts, deadlines, the winner,
//! the error; interleaving and `--resolve` parsing; a property over random outcomes.

use std::collections::HashSet;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use proptest::prelude::*;

use super::*;

fn addr(text: &str) -> SocketAddr {
    text.parse().unwrap()
}

fn drain(plan: &mut ConnectPlan, now: Instant) -> Vec<Action> {
    let mut out = Vec::new();
    while let Some(action) = plan.poll_action(now) {
        out.push(action);
    }
    out
}

fn attempt(id: usize, text: &str) -> Action {
    Action::Attempt {
        id: AttemptId(id),
        addr: addr(text),
    }
}

const V6A: &str = "[2001:db8::1]:443";
const V6B: &str = "[2001:db8::2]:443";
const V4A: &str = "192.0.2.1:443";
const V4B: &str = "192.0.2.2:443";

#[test]
fn interleaves_families_starting_with_the_first_answer() {
    let given = [addr(V6A), addr(V6B), addr(V4A), addr(V4B)];
    assert_eq!(
        interleave(&given, 1),
        [addr(V6A), addr(V4A), addr(V6B), addr(V4B)]
    );
    assert_eq!(
        interleave(&given, 2),
        [addr(V6A), addr(V6B), addr(V4A), addr(V4B)]
    );
    let v4_first = [addr(V4A), addr(V4B), addr(V6A)];
    assert_eq!(interleave(&v4_first, 0), [addr(V4A), addr(V6A), addr(V4B)]);
    assert_eq!(interleave(&[addr(V4A), addr(V4A)], 1), [addr(V4A)]);
}

#[test]
fn the_next_attempt_starts_after_the_stagger() {
    let t0 = Instant::now();
    let mut plan = ConnectPlan::new(&[addr(V6A), addr(V4A)], ConnectConfig::new(), t0);
    assert_eq!(drain(&mut plan, t0), [attempt(0, V6A)]);
    assert_eq!(plan.poll_timeout(), Some(t0 + Duration::from_millis(250)));
    assert!(drain(&mut plan, t0 + Duration::from_millis(249)).is_empty());
    let t1 = t0 + Duration::from_millis(250);
    plan.handle_timeout(t1);
    assert_eq!(drain(&mut plan, t1), [attempt(1, V4A)]);
    plan.on_connected(AttemptId(1), t1 + Duration::from_millis(1));
    assert_eq!(
        drain(&mut plan, t1),
        [
            Action::Abandon { id: AttemptId(0) },
            Action::Connected {
                id: AttemptId(1),
                addr: addr(V4A)
            }
        ]
    );
    assert!(plan.is_finished());
    assert_eq!(plan.poll_timeout(), None);
    // A late connect of the abandoned attempt changes nothing.
    plan.on_connected(AttemptId(0), t1 + Duration::from_millis(2));
    assert!(drain(&mut plan, t1).is_empty());
}

#[test]
fn the_stagger_is_clamped_to_the_rfc_bounds() {
    let t0 = Instant::now();
    let config = ConnectConfig::new().with_stagger(Duration::from_millis(1));
    let mut plan = ConnectPlan::new(&[addr(V4A), addr(V4B)], config, t0);
    drain(&mut plan, t0);
    assert_eq!(plan.poll_timeout(), Some(t0 + Duration::from_millis(100)));
    let long = ConnectConfig::new().with_stagger(Duration::from_secs(60));
    assert_eq!(long.effective_stagger(), Duration::from_secs(2));
}

#[test]
fn unbounded_timeouts_mean_never() {
    let t0 = Instant::now();
    let config = ConnectConfig::new()
        .with_attempt_timeout(Duration::MAX)
        .with_total_timeout(Duration::MAX);
    let mut plan = ConnectPlan::new(&[addr(V4A)], config, t0);
    assert_eq!(drain(&mut plan, t0), [attempt(0, V4A)]);
    assert!(plan.poll_timeout().unwrap() > t0 + Duration::from_secs(3600));
}

#[test]
fn a_failure_starts_the_next_attempt_at_once() {
    let t0 = Instant::now();
    let mut plan = ConnectPlan::new(&[addr(V4A), addr(V4B)], ConnectConfig::new(), t0);
    drain(&mut plan, t0);
    let t1 = t0 + Duration::from_millis(3);
    plan.on_failed(AttemptId(0), Reason::Refused, t1);
    assert_eq!(drain(&mut plan, t1), [attempt(1, V4B)]);
}

#[test]
fn an_attempt_past_its_deadline_is_abandoned_and_the_next_starts() {
    let t0 = Instant::now();
    let config = ConnectConfig::new()
        .with_stagger(Duration::from_secs(2))
        .with_attempt_timeout(Duration::from_secs(1));
    let mut plan = ConnectPlan::new(&[addr(V6A), addr(V4A)], config, t0);
    drain(&mut plan, t0);
    let t1 = t0 + Duration::from_secs(1);
    assert_eq!(plan.poll_timeout(), Some(t1));
    plan.handle_timeout(t1);
    assert_eq!(
        drain(&mut plan, t1),
        [Action::Abandon { id: AttemptId(0) }, attempt(1, V4A)]
    );
}

#[test]
fn the_total_deadline_ends_the_plan_and_names_every_address() {
    let t0 = Instant::now();
    let config = ConnectConfig::new().with_total_timeout(Duration::from_millis(300));
    let given = [addr(V6A), addr(V4A), addr(V6B)];
    let mut plan = ConnectPlan::new(&given, config, t0);
    drain(&mut plan, t0);
    let t1 = t0 + Duration::from_millis(250);
    drain(&mut plan, t1);
    let end = t0 + Duration::from_millis(300);
    assert_eq!(plan.poll_timeout(), Some(end));
    plan.handle_timeout(end);
    let actions = drain(&mut plan, end);
    let Some(Action::Failed(error)) = actions.last() else {
        panic!("no failure in {actions:?}");
    };
    assert_eq!(
        error.failures,
        [
            (addr(V6A), Reason::TimedOut),
            (addr(V4A), Reason::TimedOut),
            (addr(V6B), Reason::NotTried),
        ]
    );
    assert_eq!(
        actions.len(),
        3,
        "two abandons, then the failure: {actions:?}"
    );
}

#[test]
fn every_failure_is_listed_with_its_reason() {
    let t0 = Instant::now();
    let mut plan = ConnectPlan::new(&[addr(V6A), addr(V4A)], ConnectConfig::new(), t0);
    drain(&mut plan, t0);
    plan.on_failed(AttemptId(0), Reason::Unreachable, t0);
    drain(&mut plan, t0);
    plan.on_failed(
        AttemptId(1),
        Reason::from_io(std::io::ErrorKind::ConnectionRefused),
        t0,
    );
    let actions = drain(&mut plan, t0);
    let [Action::Failed(error)] = &actions[..] else {
        panic!("{actions:?}");
    };
    assert_eq!(
        error.to_string(),
        "connect failed: [2001:db8::1]:443 unreachable; 192.0.2.1:443 refused"
    );
}

#[test]
fn no_address_fails_at_once() {
    let t0 = Instant::now();
    let mut plan = ConnectPlan::new(&[], ConnectConfig::new(), t0);
    assert_eq!(
        drain(&mut plan, t0),
        [Action::Failed(ConnectError { failures: vec![] })]
    );
}

#[test]
fn fixed_addresses_are_tried_in_the_order_given() {
    let entry =
        ResolveEntry::parse("+Example.com:443:[2001:db8::1],192.0.2.1,2001:db8::2").unwrap();
    assert_eq!(entry.host, "example.com");
    assert_eq!(entry.addrs, [addr(V6A), addr(V4A), addr(V6B)]);
    assert_eq!(
        entry.addresses_for("EXAMPLE.com", 443),
        Some(&entry.addrs[..])
    );
    assert_eq!(entry.addresses_for("example.com", 80), None);
    let star = ResolveEntry::parse("*:80:192.0.2.1").unwrap();
    assert!(star.addresses_for("anything", 80).is_some());
    let t0 = Instant::now();
    let mut plan = ConnectPlan::in_order(&entry.addrs, ConnectConfig::new(), t0);
    assert_eq!(plan.addresses(), &entry.addrs[..]);
    assert_eq!(drain(&mut plan, t0), [attempt(0, V6A)]);
}

#[test]
fn malformed_resolve_entries_are_refused() {
    assert_eq!(ResolveEntry::parse("host:443"), Err(ResolveError::Format));
    assert_eq!(
        ResolveEntry::parse(":443:1.2.3.4"),
        Err(ResolveError::Format)
    );
    assert_eq!(
        ResolveEntry::parse("h:99999:1.2.3.4"),
        Err(ResolveError::Port)
    );
    assert_eq!(
        ResolveEntry::parse("h:1:1.2.3.4,nope"),
        Err(ResolveError::Address("nope".into()))
    );
}

#[derive(Debug, Clone)]
enum Step {
    Wait(u16),
    Connect(u8),
    Fail(u8),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        (0u16..3000).prop_map(Step::Wait),
        any::<u8>().prop_map(Step::Connect),
        any::<u8>().prop_map(Step::Fail),
    ]
}

proptest! {
    #[test]
    fn random_outcomes_try_each_address_once_and_always_end(
        v6 in 0usize..4,
        v4 in 0usize..4,
        steps in proptest::collection::vec(step(), 0..40),
    ) {
        let mut given: Vec<SocketAddr> = (0..v6)
            .map(|i| SocketAddr::new(std::net::Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, i as u16 + 1).into(), 443))
            .collect();
        given.extend((0..v4).map(|i| SocketAddr::new(std::net::Ipv4Addr::new(192, 0, 2, i as u8 + 1).into(), 443)));
        let config = ConnectConfig::new()
            .with_attempt_timeout(Duration::from_secs(2))
            .with_total_timeout(Duration::from_secs(5));
        let t0 = Instant::now();
        let mut now = t0;
        let mut plan = ConnectPlan::new(&given, config, now);
        let mut started = HashSet::new();
        let mut running: Vec<AttemptId> = Vec::new();
        let mut outcome = None;
        let mut apply = |actions: Vec<Action>, running: &mut Vec<AttemptId>, outcome: &mut Option<Action>| {
            for action in actions {
                prop_assert!(outcome.is_none(), "an action after the end: {action:?}");
                match action {
                    Action::Attempt { id, addr } => {
                        prop_assert!(started.insert(addr), "{addr} tried twice");
                        running.push(id);
                    }
                    Action::Abandon { id } => running.retain(|r| *r != id),
                    end => *outcome = Some(end),
                }
            }
            Ok(())
        };
        apply(drain(&mut plan, now), &mut running, &mut outcome)?;
        for step in steps.iter().chain(std::iter::repeat_n(&Step::Wait(3000), 4)) {
            match *step {
                Step::Wait(ms) => {
                    now += Duration::from_millis(u64::from(ms));
                    plan.handle_timeout(now);
                }
                Step::Connect(pick) if !running.is_empty() => {
                    let id = running[usize::from(pick) % running.len()];
                    plan.on_connected(id, now);
                }
                Step::Fail(pick) if !running.is_empty() => {
                    // After the end the driver's late reports are ignored by the plan.
                    let id = running[usize::from(pick) % running.len()];
                    plan.on_failed(id, Reason::Refused, now);
                    if outcome.is_none() {
                        running.retain(|r| *r != id);
                    }
                }
                _ => {}
            }
            apply(drain(&mut plan, now), &mut running, &mut outcome)?;
        }
        prop_assert!(now - t0 >= Duration::from_secs(12));
        match outcome {
            Some(Action::Connected { id, .. }) => {
                prop_assert_eq!(running, vec![id]);
            }
            Some(Action::Failed(error)) => {
                prop_assert!(running.is_empty());
                let listed: Vec<SocketAddr> = error.failures.iter().map(|(a, _)| *a).collect();
                prop_assert_eq!(listed, plan.addresses().to_vec());
            }
            other => prop_assert!(false, "the plan did not end: {other:?}"),
        }
    }
}
