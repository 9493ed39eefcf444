//! Order entry over a Binance-style WebSocket API: a login first on every connection, a new
//! order carrying a client order id, its response and its fill (pushed), and what to do with
//! each outcome, on the blocking driver.
//!
//! Against the simulator's order gateway (docs/ORDERS.md, "A worked example"): its login
//! takes a token where Binance takes a signed `session.logon`; the cut makes the connection
//! fail between the first order and its response.
//!
//! ```text
//! cargo run -p tickwire-cli -- exchange-sim --port 9002 --control-port 9003 --rate 0 \
//!     --login-token s3cret --order-fills &
//! curl -s 'http://127.0.0.1:9003/cut-next?how=rst'
//! cargo run -p tickwire --example order_entry -- ws://127.0.0.1:9002/ws-api/v3 3
//! ```

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tickwire::blocking::ClientBuilder;
use tickwire::blocking::rpc::Rpc;
use tickwire::feed::FeedConfig;
use tickwire::rpc::{Event, Login, Outcome, RateLimits, Request, RpcConfig, field_u64};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let url = args
        .next()
        .unwrap_or_else(|| "ws://127.0.0.1:9002/ws-api/v3".to_owned());
    let orders: u32 = args.next().map_or(Ok(3), |n| n.parse())?;

    // Binance counts request weight per minute (6 000) and reports what was used in every
    // answer; the same `RateLimits` would go to the account's REST client.
    let mut limits = RateLimits::new();
    let weight = limits.window("REQUEST_WEIGHT 1m", 6_000, Duration::from_secs(60));
    let place = limits.kind(&[(weight, 1)]);

    let config = RpcConfig::new()
        .with_login(Some(Login::new(logon, accepted)))
        .with_limits(Some(limits.into()))
        .with_usage(move |answer, limits, now| {
            // `"rateLimits":[{..,"count":N}]`: the weight the exchange counted.
            if let Some(at) = find(answer, br#""count":"#)
                && let Some((used, _)) = tickwire::feed::leading_u64(&answer[at..])
            {
                limits.observe(weight, used, now);
            }
        })
        .with_timeout(Duration::from_secs(5))
        // One order out at a time: each waits for the answer to the one before it.
        .with_max_in_flight(1);
    let mut rpc = Rpc::new(FeedConfig::new(url), config, ClientBuilder::new())?;

    // From `crates/tickwire/examples/order_entry.rs`: an order and what each outcome means.
    let mut waiting = Vec::new();
    for n in 1..=orders {
        let order = format!(
            r#"{{"method":"order.place","params":{{"symbol":"BTCUSDT","side":"BUY","type":"LIMIT","price":"50000.00","quantity":"0.001","newClientOrderId":"demo-{n}"}}}}"#
        );
        let ticket = rpc.submit(&order, Request::new().with_kind(Some(place)))?;
        waiting.push((ticket, n));
    }
    while !waiting.is_empty() {
        let Some(event) = rpc.next_event()? else {
            break;
        };
        match event {
            Event::Resolved {
                ticket, outcome, ..
            } => {
                let Some(at) = waiting.iter().position(|(t, _)| *t == ticket) else {
                    continue;
                };
                let (_, n) = waiting.swap_remove(at);
                match outcome {
                    // The exchange answered: accepted or refused, its text says.
                    Outcome::Response(text) => {
                        let order_id = find(text, br#""orderId":"#)
                            .and_then(|at| tickwire::feed::leading_u64(&text[at..]))
                            .map(|(id, _)| id);
                        println!("demo-{n}: answered, orderId {order_id:?}");
                    }
                    // Never written: nothing can have happened; safe to send again.
                    Outcome::NotSent(why) => println!("demo-{n}: not sent ({why:?}): resend"),
                    // Written, then no answer or the connection failed: the order may be
                    // live. Look it up by its client order id before sending it again.
                    Outcome::TimedOut | Outcome::OutcomeUnknown => {
                        println!(
                            "demo-{n}: {}: query demo-{n} before resending",
                            outcome.name()
                        );
                    }
                    other => println!("demo-{n}: {}", other.name()),
                }
            }
            // Fills and order updates come pushed, with no request id.
            Event::Pushed { payload, .. } => {
                println!("pushed: {}", String::from_utf8_lossy(payload));
            }
            Event::Ready { conn } => println!("{conn}: logged in"),
            Event::LoginFailed { conn, failure } => println!("{conn}: login failed: {failure:?}"),
            _ => {}
        }
    }
    let counters = rpc.counters();
    println!(
        "orders {orders}: {} answered, {} unknown, {} timed out, {} not sent; {} logins",
        counters.responses,
        counters.unknown,
        counters.timed_out,
        counters.not_sent,
        counters.logins
    );
    Ok(())
}

/// The login, built at each connect: Binance signs `apiKey`, `timestamp` (and the other
/// parameters) with the account's Ed25519 key into `signature`; the simulator checks a
/// token instead.
fn logon() -> String {
    let timestamp = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |t| t.as_millis());
    format!(
        r#"{{"method":"session.logon","params":{{"apiKey":"demo","timestamp":{timestamp},"token":"s3cret"}}}}"#
    )
}

/// The login's answer: status 200, or the exchange's refusal.
fn accepted(answer: &[u8]) -> Result<(), String> {
    match field_u64(answer, "status") {
        Some(200) => Ok(()),
        _ => Err(String::from_utf8_lossy(answer).into_owned()),
    }
}

/// Where the bytes after `needle` start in `text`.
fn find(text: &[u8], needle: &[u8]) -> Option<usize> {
    text.windows(needle.len())
        .position(|w| w == needle)
        .map(|at| at + needle.len())
}
