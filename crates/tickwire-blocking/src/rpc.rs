//! The blocking driver of an [`RpcSession`](tickwire_codec::rpc::RpcSession): [`Rpc`] over
//! the blocking feed's [`Connections`]. The glue is written once in [`tickwire_core::rpc`];
//! this module has only the wait.

use std::io;

use tickwire_codec::rpc::Event;
use tickwire_core::rpc::{Before, RpcIo};

use crate::feed::Connections;

/// Requests and responses over blocking WebSocket connections kept by a feed session
/// (reconnects, send quotas, receive times): see
/// [`RpcSession`](tickwire_codec::rpc::RpcSession) for what it decides and
/// [`tickwire_core::rpc::Rpc`] for its calls.
///
/// ```no_run
/// use tickwire_blocking::ClientBuilder;
/// use tickwire_blocking::codec::feed::FeedConfig;
/// use tickwire_blocking::codec::rpc::{Event, Outcome, Request, RpcConfig};
/// use tickwire_blocking::rpc::Rpc;
///
/// let feed = FeedConfig::new("wss://ws-api.example/ws");
/// let mut rpc = Rpc::new(feed, RpcConfig::new(), ClientBuilder::new())?;
/// let order = rpc.submit(r#"{"method":"order.place","params":{"symbol":"BTCUSDT"}}"#, Request::new())?;
/// while let Some(event) = rpc.next_event()? {
///     match event {
///         Event::Resolved { ticket, outcome: Outcome::Response(text), rtt } if ticket == order => {
///             println!("{rtt:?}: {}", String::from_utf8_lossy(text));
///             break;
///         }
///         Event::Resolved { ticket, outcome, .. } if ticket == order => {
///             println!("{}", outcome.name());
///             break;
///         }
///         _ => {}
///     }
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub type Rpc = tickwire_core::rpc::Rpc<Connections>;

impl RpcIo for Connections {
    type NextRpc<'a> = io::Result<Option<Event<'a>>>;

    fn next_rpc_event(rpc: &mut Rpc) -> Self::NextRpc<'_> {
        loop {
            match rpc.before_wait() {
                Before::Event(event) => return Ok(Some(event)),
                Before::Done => return Ok(None),
                Before::Wait => {}
            }
            let given = {
                let (feed, mut waiter) = rpc.wait_parts();
                let event = feed.next_event()?;
                waiter.after(event.as_ref())
            };
            if let Some(absorbed) = given {
                return Ok(Some(rpc.event(absorbed)));
            }
        }
    }
}
