//! The tokio feed as the shared suite's `Driver`: a current-thread runtime of its own.

use std::time::Instant;

use super::feed_support::{Driver, Seen, seen};
use tickwire_tokio::ClientOptions;
use tickwire_tokio::codec::feed::{ConnId, Counters, FeedConfig, SendError};
use tickwire_tokio::feed::Feed;

pub(crate) struct OnTokio {
    runtime: tokio::runtime::Runtime,
    feed: Feed,
}

impl Driver for OnTokio {
    fn start_with(config: FeedConfig, client: ClientOptions) -> Self {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let feed = {
            let _entered = runtime.enter();
            Feed::new(config, client).unwrap()
        };
        Self { runtime, feed }
    }

    fn next(&mut self) -> Seen {
        let event = self.runtime.block_on(self.feed.next_event());
        seen(event.expect("the feed does not end"))
    }

    fn counters(&mut self) -> Counters {
        self.feed.session().counters(Instant::now())
    }

    fn send(&mut self, conn: ConnId, text: &str) -> Result<(), SendError> {
        self.feed.send(conn, text, 1)
    }
}
