//! The feed session's fault suite (issue 45): the exchange simulator, toxiproxy between it
//! and a feed session, and one table of scenarios run against the blocking and the tokio
//! driver alike. Each scenario sets the rig up, applies its fault (once, or three times with
//! `TICKWIRE_FEED_FAULTS=full`, as CI's `feed-faults` lane does), and ends with the checks
//! every case owes ([`Rig::finish`]): each number the simulator sent delivered once and in
//! order per key or in exactly one gap event, reconnect delays within the back-off's
//! bounds, the connect budget and the send quota never exceeded as the simulator counts.

use std::time::Duration;

use tickwire::feed::{Counters, Disconnect, FeedConfig, ReconnectReason};

use crate::echo::PATIENCE;
use crate::feed_faults_rig::{KEYS, Losses, QUIET_KEEPALIVE, Rig, SLACK, STALE, closed_reason};
use crate::feed_faults_support::{Command, Driver, Keepalive, What};
use crate::toxiproxy::{Toxic, Toxiproxy};

/// One case: the rig's shape, the fault, and what may be lost.
struct Scenario {
    /// Proxies, one per redundant connection.
    proxies: usize,
    sim_args: &'static [&'static str],
    config: fn(FeedConfig) -> FeedConfig,
    keepalive: Keepalive,
    /// Toxics on the proxies before the feed connects.
    before: fn(&Toxiproxy, &[String]),
    fault: fn(&mut Rig),
    losses: Losses,
    /// Checks of the session's figures at the end.
    figures: fn(&Counters),
}

const BASE: Scenario = Scenario {
    proxies: 1,
    sim_args: &[],
    config: |config| config,
    keepalive: QUIET_KEEPALIVE,
    before: |_, _| {},
    fault: |_| {},
    losses: Losses::None,
    figures: |_| {},
};

/// Keepalive pings after 100 ms without traffic, a pong due within 300 ms.
const PONG_KEEPALIVE: Keepalive = Keepalive {
    ping_every: Duration::from_millis(100),
    pong_within: Duration::from_millis(300),
};

/// The table: `name => scenario`, each a test on either driver.
macro_rules! fault_suite {
    ($($name:ident => $scenario:expr,)*) => {
        mod on_blocking {
            use super::*;
            $(#[test]
            fn $name() {
                run(Driver::Blocking, &$scenario);
            })*
        }
        mod on_tokio {
            use super::*;
            $(#[test]
            fn $name() {
                run(Driver::Tokio, &$scenario);
            })*
        }
    };
}

fault_suite! {
    latency_with_jitter_then_a_fin => Scenario {
        before: |toxiproxy, proxies| {
            toxiproxy.add(&proxies[0], &Toxic::latency("downstream", 30, 10));
            let up = Toxic { name: "latency_up", ..Toxic::latency("upstream", 30, 10) };
            toxiproxy.add(&proxies[0], &up);
        },
        fault: closed_by_the_simulator_with_a_fin,
        losses: Losses::Reported,
        ..BASE
    },
    reset_peer_in_mid_message => Scenario {
        // 400-byte messages in segments of about 48: a cut lands inside one.
        sim_args: &["--size", "400"],
        before: |toxiproxy, proxies| {
            toxiproxy.arm_resets(&proxies[0]);
            toxiproxy.add(&proxies[0], &Toxic::slicer("downstream", 48, 16, 200));
        },
        fault: reset_in_mid_message,
        losses: Losses::Reported,
        ..BASE
    },
    a_black_hole_fires_the_stale_timer => Scenario {
        fault: black_hole_until_stale,
        losses: Losses::Reported,
        ..BASE
    },
    a_black_hole_fires_the_pong_deadline => Scenario {
        config: |config| config.with_stale_after(None),
        keepalive: PONG_KEEPALIVE,
        fault: black_hole_until_the_pong_deadline,
        losses: Losses::Reported,
        ..BASE
    },
    slicer_segments_of_a_few_bytes => Scenario {
        before: |toxiproxy, proxies| {
            toxiproxy.add(&proxies[0], &Toxic::slicer("downstream", 5, 3, 20));
            let up = Toxic { name: "slicer_up", ..Toxic::slicer("upstream", 3, 2, 20) };
            toxiproxy.add(&proxies[0], &up);
        },
        fault: sends_replays_and_a_skip_through_slices,
        losses: Losses::Skipped,
        figures: |counters| assert!(counters.duplicates >= 5, "{counters:?}"),
        ..BASE
    },
    limit_data_cuts_every_connection => Scenario {
        fault: reconnect_storm,
        losses: Losses::Reported,
        ..BASE
    },
    a_stall_is_detected_within_its_bound => Scenario {
        fault: stall_until_stale,
        losses: Losses::Reported,
        ..BASE
    },
    rotation_on_request_loses_and_repeats_nothing => Scenario {
        fault: rotate_on_request,
        ..BASE
    },
    rotation_at_an_age_loses_and_repeats_nothing => Scenario {
        config: |config| config.with_rotate_after(Some(Duration::from_millis(700))),
        fault: rotations_at_age,
        ..BASE
    },
    a_redundant_pair_with_one_cut_has_no_gap => Scenario {
        proxies: 2,
        before: |toxiproxy, proxies| toxiproxy.arm_resets(&proxies[0]),
        fault: reset_in_mid_message,
        ..BASE
    },
    a_redundant_pair_with_one_stalled_has_no_gap => Scenario {
        proxies: 2,
        fault: stall_until_stale,
        ..BASE
    },
    a_redundant_pair_with_one_skipping_has_no_gap => Scenario {
        proxies: 2,
        fault: one_connection_skips,
        ..BASE
    },
    rotation_under_jitter_loses_and_repeats_nothing => Scenario {
        before: |toxiproxy, proxies| {
            toxiproxy.add(&proxies[0], &Toxic::latency("downstream", 30, 25));
        },
        fault: rotate_on_request,
        ..BASE
    },
    a_reset_during_rotation_loses_nothing_the_new_one_has => Scenario {
        before: |toxiproxy, proxies| toxiproxy.arm_resets(&proxies[0]),
        fault: reset_while_rotating,
        losses: Losses::Reported,
        ..BASE
    },
    a_redundant_pair_with_one_delayed_has_no_gap => Scenario {
        proxies: 2,
        before: |toxiproxy, proxies| {
            toxiproxy.add(&proxies[0], &Toxic::latency("downstream", 50, 0));
        },
        fault: |rig| rig.run_for(Duration::from_secs(1)),
        figures: |counters| {
            let [slow, fast] = [counters.connections[0], counters.connections[1]];
            assert!(fast.first_arrivals > slow.first_arrivals, "{counters:?}");
            assert!(slow.duplicates > 0, "{counters:?}");
        },
        ..BASE
    },
}

fn run(driver: Driver, scenario: &Scenario) {
    let mut rig = Rig::start(
        driver,
        scenario.proxies,
        scenario.sim_args,
        scenario.config,
        scenario.keepalive,
        scenario.before,
    );
    for _ in 0..rounds() {
        (scenario.fault)(&mut rig);
        rig.wait_live();
    }
    let counters = rig.finish(scenario.losses);
    (scenario.figures)(&counters);
}

/// Each fault once; three times in CI's `feed-faults` lane (`TICKWIRE_FEED_FAULTS=full`).
fn rounds() -> usize {
    match std::env::var("TICKWIRE_FEED_FAULTS").as_deref() {
        Ok("full") => 3,
        _ => 1,
    }
}

/// The simulator ends slot 0's connection with a FIN and no close frame.
fn closed_by_the_simulator_with_a_fin(rig: &mut Rig) {
    rig.run_for(Duration::from_millis(500));
    let slot = rig.active[0];
    rig.sim
        .control(&format!("/close?conn={}&how=fin", rig.sim_conn(slot)));
    rig.until("the end of stream", PATIENCE, |got| {
        closed_reason(got) == Some((slot, ReconnectReason::Disconnect(Disconnect::Eof)))
    });
}

/// A `reset_peer` on slot 0's proxy (armed by the scenario's `before`): the next data
/// resets the connection.
fn reset_in_mid_message(rig: &mut Rig) {
    rig.run_for(Duration::from_millis(300));
    let slot = rig.active[0];
    let proxy = rig.proxies[usize::from(slot)].clone();
    rig.toxiproxy
        .add(&proxy, &Toxic::reset_peer("downstream", 0));
    rig.until("the reset", PATIENCE, |got| {
        closed_reason(got) == Some((slot, ReconnectReason::Disconnect(Disconnect::Reset)))
    });
    rig.toxiproxy.remove(&proxy, "reset_peer");
}

/// A `timeout` (black hole) on the way to the client: the stale timer fires within its
/// bound, and the attempt made while the hole lasts times out.
fn black_hole_until_stale(rig: &mut Rig) {
    rig.run_for(Duration::from_millis(300));
    let proxy = rig.proxies[0].clone();
    rig.toxiproxy.add(&proxy, &Toxic::timeout("downstream", 0));
    let stale = rig.until("stale", PATIENCE, |got| {
        matches!(got.what, What::Stale { .. })
    });
    let What::Stale { silent_for, .. } = stale.what else {
        unreachable!()
    };
    assert!(silent_for >= STALE, "stale after {silent_for:?}");
    let last = rig.last_before(rig.log.len() - 1, |what| {
        matches!(what, What::Message { .. })
    });
    let detected = stale.at - last.at;
    assert!(detected <= STALE + SLACK, "stale {detected:?} after data");
    rig.until("an attempt into the hole timing out", PATIENCE, |got| {
        matches!(
            got.what,
            What::Reconnecting {
                reason: ReconnectReason::ConnectTimeout
                    | ReconnectReason::Disconnect(Disconnect::TimedOut),
                ..
            }
        )
    });
    rig.toxiproxy.remove(&proxy, "timeout");
}

/// A black hole with no stale timer: the WebSocket keepalive's pong deadline fires, no
/// sooner and not much later than the ping's quiet time and the pong's deadline.
fn black_hole_until_the_pong_deadline(rig: &mut Rig) {
    rig.run_for(Duration::from_millis(300));
    let proxy = rig.proxies[0].clone();
    rig.toxiproxy.add(&proxy, &Toxic::timeout("downstream", 0));
    let slot = rig.active[0];
    let closed = rig.until("the pong deadline", PATIENCE, |got| {
        closed_reason(got) == Some((slot, ReconnectReason::Disconnect(Disconnect::TimedOut)))
    });
    let last = rig.last_before(rig.log.len() - 1, |what| {
        matches!(what, What::Message { .. })
    });
    let bound = PONG_KEEPALIVE.ping_every + PONG_KEEPALIVE.pong_within;
    let detected = closed.at - last.at;
    assert!(
        detected + Duration::from_millis(5) >= PONG_KEEPALIVE.pong_within,
        "failed {detected:?} after data"
    );
    assert!(detected <= bound + SLACK, "failed {detected:?} after data");
    rig.toxiproxy.remove(&proxy, "timeout");
}

/// Through segments of a few bytes both ways: a flood of sends held to the quota (the
/// simulator gets every one), the simulator replaying messages (duplicates, dropped) and
/// skipping numbers (one gap, exactly the skip).
fn sends_replays_and_a_skip_through_slices(rig: &mut Rig) {
    const SENDS: u32 = 12;
    rig.run_for(Duration::from_millis(300));
    let slot = rig.active[0];
    let conn = rig.sim_conn(slot);
    let before = rig.sim.conn(conn)["received"].as_u64().unwrap();
    rig.command(Command::Flood {
        conn: slot,
        count: SENDS,
        text: "ping".into(),
    });
    let flooded = rig.until("the flood", PATIENCE, |got| {
        matches!(got.what, What::Flooded { .. })
    });
    let What::Flooded { sent, refused } = flooded.what else {
        unreachable!()
    };
    assert_eq!(sent, SENDS);
    assert!(refused > 0, "the quota never refused a send");
    let wanted = before + u64::from(SENDS);
    rig.sim.wait_counters("every send arrives", |c| {
        c["connections"][conn as usize]["received"] == wanted
    });
    rig.sim.control(&format!("/replay?conn={conn}&count=5"));
    rig.sim.control(&format!("/gap?key={}&size=3", KEYS[0]));
    rig.until(
        "the skip's gap",
        PATIENCE,
        |got| matches!(&got.what, What::Gap { key, from, to } if key == KEYS[0] && to - from == 2),
    );
}

/// `limit_data`: every connection is cut after 1500 bytes, again and again; the connect
/// budget holds the attempts back.
fn reconnect_storm(rig: &mut Rig) {
    rig.run_for(Duration::from_millis(200));
    let proxy = rig.proxies[0].clone();
    let from = rig.log.len();
    rig.toxiproxy
        .add(&proxy, &Toxic::limit_data("downstream", 1500));
    rig.run_for(Duration::from_millis(2500));
    rig.toxiproxy.remove(&proxy, "limit_data");
    let storm = &rig.log[from..];
    let cuts = storm
        .iter()
        .filter(|got| matches!(got.what, What::Closed { .. }))
        .count();
    assert!(cuts >= 3, "{cuts} cuts");
    assert!(
        storm.iter().any(|got| matches!(
            got.what,
            What::RateLimited {
                limited: tickwire::feed::Limited::Connect,
                ..
            }
        )),
        "the connect budget never held an attempt back"
    );
}

/// `/stall`: the subscription goes quiet while pings are answered; the stale timer fires
/// within its bound of the request.
fn stall_until_stale(rig: &mut Rig) {
    rig.run_for(Duration::from_millis(300));
    let slot = rig.active[0];
    let asked = std::time::Instant::now();
    rig.sim
        .control(&format!("/stall?conn={}", rig.sim_conn(slot)));
    let stale = rig.until(
        "stale",
        PATIENCE,
        |got| matches!(got.what, What::Stale { conn, .. } if conn == slot),
    );
    let What::Stale { silent_for, .. } = stale.what else {
        unreachable!()
    };
    assert!(silent_for >= STALE, "stale after {silent_for:?}");
    let detected = stale.at - asked;
    assert!(
        detected <= STALE + SLACK,
        "stale {detected:?} after the stall"
    );
}

/// `feed.rotate(conn)`: the new connection takes over, the old one is closed with 1000.
fn rotate_on_request(rig: &mut Rig) {
    rig.run_for(Duration::from_millis(300));
    let from = rig.active[0];
    let old = rig.sim_conn(from) as usize;
    rig.command(Command::Rotate(from));
    let asked = rig.until("rotate's answer", PATIENCE, |got| {
        matches!(got.what, What::RotateAsked(_))
    });
    assert!(matches!(asked.what, What::RotateAsked(true)));
    rig.until(
        "the rotation",
        PATIENCE,
        |got| matches!(got.what, What::Rotated { from: f, .. } if f == from),
    );
    rig.sim
        .wait_counters("the old connection closed with 1000", |c| {
            c["connections"][old]["ended"] == "peer ws 1000"
        });
}

/// Rotations at the configured age: two more each round.
fn rotations_at_age(rig: &mut Rig) {
    for _ in 0..2 {
        rig.until("a rotation at age", PATIENCE, |got| {
            matches!(got.what, What::Rotated { .. })
        });
    }
}

/// `/gap?conn=`: slot 0's connection leaves numbers out, slot 1's has them.
fn one_connection_skips(rig: &mut Rig) {
    rig.run_for(Duration::from_millis(300));
    let conn = rig.sim_conn(rig.active[0]);
    for key in KEYS {
        rig.sim
            .control(&format!("/gap?key={key}&size=4&conn={conn}"));
    }
    rig.run_for(Duration::from_millis(500));
}

/// A rotation asked for, and the old connection reset before the new one caught up.
fn reset_while_rotating(rig: &mut Rig) {
    rig.run_for(Duration::from_millis(300));
    let from = rig.active[0];
    rig.command(Command::Rotate(from));
    rig.until("rotate's answer", PATIENCE, |got| {
        matches!(got.what, What::RotateAsked(true))
    });
    let proxy = rig.proxies[0].clone();
    rig.toxiproxy
        .add(&proxy, &Toxic::reset_peer("downstream", 0));
    rig.until("the reset", PATIENCE, |got| {
        closed_reason(got) == Some((from, ReconnectReason::Disconnect(Disconnect::Reset)))
    });
    rig.toxiproxy.remove(&proxy, "reset_peer");
    rig.until("the rotation", PATIENCE, |got| {
        matches!(got.what, What::Rotated { .. })
    });
}
