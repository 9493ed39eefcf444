//! Nodes (tickwire-server with a NATS bridge, in this process) fed by a real nats-server on
//! 127.0.0.1: delivery in order on every node, interest-based subscriptions, gaps filled
//! from JetStream or reported, resumes on another node, and a node cut off NATS.

mod support;

use std::thread;
use std::time::Duration;

use support::{
    Feed, NatsServer, Node, Proxy, Tally, eventually, read_all, skip_to, until_relaying,
};

#[test]
fn every_client_of_every_node_gets_every_message_in_order() {
    let nats = NatsServer::start();
    let nodes: Vec<Node> = (0..3).map(|_| Node::start(&nats.url(), |b| b)).collect();
    let mut feed = Feed::connect(&nats.url());
    let mut clients = Vec::new();
    for node in &nodes {
        for topic in ["core", "js"] {
            clients.push((topic, node.subscribe(topic)));
        }
    }
    // The subscriptions reach NATS in the background: count from the first messages every
    // node is sure to relay.
    let all: Vec<&Node> = nodes.iter().collect();
    let starts = until_relaying(&mut feed, &all, &["core", "js"]);
    let core_last = feed.publish("core", 5_000);
    let js_last = feed.publish("js", 5_000);
    for (topic, ws) in &mut clients {
        let (start, last) = match *topic {
            "core" => (starts[0], core_last),
            _ => (starts[1], js_last),
        };
        skip_to(ws, start);
        read_all(ws, start + 1, last);
    }
    for node in &nodes {
        let stats = node.bridge.handle().stats();
        assert_eq!((stats.gaps, stats.refused), (0, 0), "{stats:?}");
    }
}

#[test]
fn a_node_takes_a_topic_from_nats_only_while_it_has_subscribers() {
    let nats = NatsServer::start();
    let busy = Node::start(&nats.url(), |b| b);
    let idle = Node::start(&nats.url(), |b| b);
    let mut feed = Feed::connect(&nats.url());
    let ws = busy.subscribe("core");
    eventually("the busy node relaying", || {
        feed.publish("core", 10);
        busy.bridge.handle().stats().relayed > 0
    });
    feed.publish("core", 1_000);
    eventually("the busy node relaying all", || {
        busy.bridge.handle().stats().received >= 1_010
    });
    assert_eq!(idle.bridge.handle().stats().received, 0);
    // A subscriber makes the idle node take the topic; its leaving stops it again.
    let late = idle.subscribe("core");
    eventually("the idle node relaying", || {
        feed.publish("core", 1);
        idle.bridge.handle().stats().relayed > 0
    });
    drop(late);
    drop(ws);
    eventually("no subscriber left on the idle node", || {
        let before = idle.bridge.handle().stats().received;
        feed.publish("core", 100);
        thread::sleep(Duration::from_millis(50));
        idle.bridge.handle().stats().received == before
    });
}

#[test]
fn a_node_cut_off_nats_fills_a_jetstream_topic_and_reports_the_gap_of_a_core_topic() {
    let nats = NatsServer::start();
    let proxy = Proxy::start(nats.port);
    let node = Node::start(&proxy.url(), |b| b);
    let mut feed = Feed::connect(&nats.url());
    let mut core = node.subscribe("core");
    let mut js = node.subscribe("js");
    let starts = until_relaying(&mut feed, &[&node], &["core", "js"]);
    skip_to(&mut core, starts[0]);
    skip_to(&mut js, starts[1]);
    let mut core_tally = Tally::after(starts[0]);
    let mut js_tally = Tally::after(starts[1]);
    let before = node.bridge.handle().stats().connects;
    proxy.cut();
    eventually("the node noticing", || {
        !node.bridge.handle().stats().connected
    });
    // Published while the node is away: lost to it on core NATS, kept by the stream.
    let core_away = feed.publish("core", 500);
    let js_away = feed.publish("js", 500);
    proxy.restore();
    eventually("the node back", || {
        node.bridge.handle().stats().connects > before
    });
    // Its subscriptions are back on the server once a message of each arrives.
    until_relaying(&mut feed, &[&node], &["core", "js"]);
    let core_last = feed.publish("core", 500);
    let js_last = feed.publish("js", 500);
    assert!(js_tally.follow(&mut js, js_last));
    assert!(core_tally.follow(&mut core, core_last));
    // The stream filled everything; core NATS could not, and the client was told.
    assert_eq!(js_tally.missed, 0, "{js_tally:?}");
    assert!(
        core_tally.missed >= 500 && core_tally.last == core_last,
        "{core_tally:?} (away until {core_away})"
    );
    let stats = node.bridge.handle().stats();
    assert!(stats.filled >= 500, "{stats:?} (away until {js_away})");
}

#[test]
fn a_client_that_moves_to_another_node_resumes_without_a_hole() {
    let nats = NatsServer::start();
    let first = Node::start(&nats.url(), |b| b);
    let second = Node::start(&nats.url(), |b| b);
    let mut feed = Feed::connect(&nats.url());
    for topic in ["core", "js"] {
        let mut ws = first.subscribe(topic);
        // The second node has the core topic's recent history only if it relays it.
        let _keep = second.subscribe(topic);
        let start = until_relaying(&mut feed, &[&first, &second], &[topic])[0];
        skip_to(&mut ws, start);
        let mut tally = Tally::after(start);
        let mid = feed.publish(topic, 1_000);
        assert!(tally.follow(&mut ws, mid - 400));
        // The client goes away with 400 messages unread, more are published, and it
        // resumes on the other node from the last number it has.
        drop(ws);
        feed.publish(topic, 1_000);
        let mut moved = second.resume(topic, tally.last);
        let last = feed.publish(topic, 1_000);
        assert!(tally.follow(&mut moved, last));
        assert_eq!(tally.missed, 0, "{topic}: {tally:?}");
    }
    let stats = second.bridge.handle().stats();
    assert_eq!(stats.resumes, 2, "{stats:?}");
    assert!(stats.replayed > 0, "{stats:?}");
}

#[test]
fn a_resume_from_before_the_history_replays_the_stream_or_reports_the_gap() {
    let nats = NatsServer::start();
    // A short history: the JetStream topic replays from the stream, the core topic cannot.
    let node = Node::start(&nats.url(), |b| b.history(100));
    let mut feed = Feed::connect(&nats.url());
    for topic in ["js", "core"] {
        let mut ws = node.subscribe(topic);
        let start = until_relaying(&mut feed, &[&node], &[topic])[0];
        skip_to(&mut ws, start);
        let last = feed.publish(topic, 2_000);
        // Once the node has relayed them all, its history holds the last 100.
        read_all(&mut ws, start + 1, last);
        let mut resumed = node.resume(topic, start);
        let mut tally = Tally::after(start);
        assert!(tally.follow(&mut resumed, last));
        if topic == "js" {
            assert_eq!(tally.missed, 0, "{tally:?}");
        } else {
            // The node kept the last 100; the rest is reported, first thing.
            assert_eq!(tally.received, 100, "{tally:?}");
            assert_eq!(tally.missed, last - start - 100, "{tally:?}");
        }
        drop(ws);
    }
}

#[test]
fn nodes_recover_from_a_nats_restart_with_every_number_received_or_reported() {
    let mut nats = NatsServer::start();
    let nodes: Vec<Node> = (0..2).map(|_| Node::start(&nats.url(), |b| b)).collect();
    let mut feed = Feed::connect(&nats.url());
    let mut clients = Vec::new();
    for node in &nodes {
        for topic in ["core", "js"] {
            clients.push((topic, node.subscribe(topic)));
        }
    }
    let all: Vec<&Node> = nodes.iter().collect();
    let starts = until_relaying(&mut feed, &all, &["core", "js"]);
    let mut tallies: Vec<Tally> = clients
        .iter_mut()
        .map(|(topic, ws)| {
            let start = if *topic == "core" {
                starts[0]
            } else {
                starts[1]
            };
            skip_to(ws, start);
            Tally::after(start)
        })
        .collect();
    feed.publish("core", 1_000);
    feed.publish("js", 1_000);
    let connects: Vec<u64> = nodes
        .iter()
        .map(|n| n.bridge.handle().stats().connects)
        .collect();
    nats.restart(Duration::from_millis(300));
    let core_last = feed.publish_through_outage("core", 1_000);
    let js_last = feed.publish_through_outage("js", 1_000);
    eventually("every node reconnected", || {
        nodes
            .iter()
            .zip(&connects)
            .all(|(n, &before)| n.bridge.handle().stats().connects > before)
    });
    // A core message published before a node's subscription is back on the server is
    // lost to it without a trace until the next one: publish until every node relays
    // both topics again, then more, so that each sees where the topics are.
    until_relaying(&mut feed, &all, &["core", "js"]);
    let core_last = core_last.max(feed.publish("core", 100));
    let js_last = js_last.max(feed.publish("js", 100));
    for ((topic, ws), tally) in clients.iter_mut().zip(&mut tallies) {
        let last = if *topic == "core" { core_last } else { js_last };
        assert!(tally.follow(ws, last), "{topic}");
        assert!(tally.received > 0, "{topic}: {tally:?}");
    }
}
