//! Nodes (tickwire-server with a NATS bridge, in this process) fed by a real nats-server on
//! 127.0.0.1: delivery in order on every node, interest-based subscriptions, gaps filled
//! from JetStream or reported, resumes on another node, and a node cut off NATS.

mod support;

use std::thread;
use std::time::Duration;

use support::{Feed, Got, NatsServer, Node, Proxy, Tally, eventually, next, read_all};

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
    // The subscriptions reach NATS in the background: the first message each node relays
    // is where its clients start. Wait until every node relays, then count from there.
    let mut core_start = 0;
    let mut js_start = 0;
    eventually("every node relaying both topics", || {
        core_start = feed.publish("core", 1);
        js_start = feed.publish("js", 1);
        nodes.iter().all(|n| n.bridge.handle().stats().relayed >= 2)
    });
    let core_last = feed.publish("core", 5_000);
    let js_last = feed.publish("js", 5_000);
    for (topic, ws) in &mut clients {
        let (start, last) = match *topic {
            "core" => (core_start, core_last),
            _ => (js_start, js_last),
        };
        // Skip what arrived before every node relayed.
        let first = loop {
            match next(ws) {
                Got::Seq(seq) if seq >= start => break seq,
                Got::Seq(_) => {}
                other => panic!("{topic}: {other:?}"),
            }
        };
        assert_eq!(first, start, "{topic}");
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
    let (mut core_tally, mut js_tally) = (Tally::default(), Tally::default());
    eventually("the node relaying", || {
        feed.publish("core", 1);
        feed.publish("js", 1);
        node.bridge.handle().stats().relayed >= 2
    });
    // Read up to what is there, from the first number each client got.
    let first_core = match next(&mut core) {
        Got::Seq(seq) => seq,
        other => panic!("{other:?}"),
    };
    let first_js = match next(&mut js) {
        Got::Seq(seq) => seq,
        other => panic!("{other:?}"),
    };
    core_tally.last = first_core;
    js_tally.last = first_js;
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
    let mut previous = (u64::MAX, u64::MAX);
    eventually("the node relaying both topics again", || {
        let relaying = node.last_seq("core") >= previous.0 && node.last_seq("js") >= previous.1;
        previous = (feed.publish("core", 1), feed.publish("js", 1));
        relaying
    });
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
        let relayed = |n: &Node| n.bridge.handle().stats().relayed;
        let before = (relayed(&first), relayed(&second));
        eventually("both nodes relaying", || {
            feed.publish(topic, 1);
            relayed(&first) > before.0 && relayed(&second) > before.1
        });
        let start = match next(&mut ws) {
            Got::Seq(seq) => seq,
            other => panic!("{other:?}"),
        };
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
        let before = node.bridge.handle().stats().relayed;
        eventually("the node relaying", || {
            feed.publish(topic, 1);
            node.bridge.handle().stats().relayed > before
        });
        let start = match next(&mut ws) {
            Got::Seq(seq) => seq,
            other => panic!("{other:?}"),
        };
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
    eventually("every node relaying", || {
        feed.publish("core", 1);
        feed.publish("js", 1);
        nodes.iter().all(|n| n.bridge.handle().stats().relayed >= 2)
    });
    let mut tallies: Vec<Tally> = clients
        .iter_mut()
        .map(|(topic, ws)| match next(ws) {
            Got::Seq(seq) => Tally::after(seq),
            other => panic!("{topic}: {other:?}"),
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
    let mut previous = (u64::MAX, u64::MAX);
    eventually("every node relaying both topics again", || {
        let relaying = nodes
            .iter()
            .all(|n| n.last_seq("core") >= previous.0 && n.last_seq("js") >= previous.1);
        previous = (feed.publish("core", 1), feed.publish("js", 1));
        relaying
    });
    let core_last = core_last.max(feed.publish("core", 100));
    let js_last = js_last.max(feed.publish("js", 100));
    for ((topic, ws), tally) in clients.iter_mut().zip(&mut tallies) {
        let last = if *topic == "core" { core_last } else { js_last };
        assert!(tally.follow(ws, last), "{topic}");
        assert!(tally.received > 0, "{topic}: {tally:?}");
    }
}
