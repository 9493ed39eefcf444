//! The opening handshake between socket calls, for every transport: [`ClientOpening`] and
//! [`ServerOpening`] hold the codec's handshake with the bytes it reads and writes, and
//! decide what each outcome means for the caller ([`Opened`], or which [`Error`]). A
//! transport only moves their bytes: it writes [`request`](ClientOpening::request) /
//! [`answer`](ServerOpening::answer), reads into `received`, and bounds it all with its
//! deadline. They own no socket and no clock (time is passed in).

use std::time::Instant;

use tickwire_codec::buf::{ReadBuf, WriteBuf};
#[cfg(feature = "deflate")]
use tickwire_codec::deflate::DeflateParams;
use tickwire_codec::handshake::{
    self, Accepted, ClientHandshake, Endpoint, HandshakeError, Outcome, Parsed, Request, Response,
    ServerHandshake,
};
use tickwire_codec::ws::{Buffers, Connection, MaskSource};

use crate::Error;

/// A connection the opening handshake opened, with what it settled on.
#[derive(Debug)]
#[non_exhaustive]
pub struct Opened {
    /// The connection, with the negotiated extension installed.
    pub connection: Connection,
    /// Its buffers: the receive side already holds the bytes that followed the handshake,
    /// parsed first, without a copy.
    pub buffers: Buffers,
    /// The subprotocol selected.
    pub subprotocol: Option<String>,
    /// The permessage-deflate parameters in force, `None` when not negotiated.
    #[cfg(feature = "deflate")]
    pub deflate: Option<DeflateParams>,
}

/// Parses a client's `ws://` / `wss://` URL ([`Error::InvalidUrl`] when it is not one).
pub fn parse_url(url: &str) -> Result<url::Url, Error> {
    url::Url::parse(url).map_err(|e| Error::InvalidUrl(e.to_string()))
}

/// Where `url` says to connect: [`Error::InvalidUrl`] for a scheme other than `ws` / `wss`
/// or no host, [`Error::UnsupportedScheme`] for `wss://` when TLS was not built in (feature
/// `tls`).
pub fn endpoint(url: &url::Url) -> Result<Endpoint<'_>, Error> {
    let endpoint = Endpoint::of(url).map_err(|e| match e {
        HandshakeError::InvalidUrl(why) => Error::InvalidUrl(why),
        other => Error::Handshake(other),
    })?;
    if endpoint.secure && !cfg!(feature = "tls") {
        return Err(tls_not_built());
    }
    Ok(endpoint)
}

/// The error for a `wss://` URL in a build without TLS.
pub fn tls_not_built() -> Error {
    Error::UnsupportedScheme("a TLS scheme (build with the `tls` feature)".into())
}

/// The client's opening handshake: the request to write, then the response read until the
/// 101 (or a refusal, as an error).
#[derive(Debug)]
pub struct ClientOpening {
    handshake: ClientHandshake,
    request: WriteBuf,
    received: ReadBuf,
    accepted: Option<Accepted>,
}

impl ClientOpening {
    /// The handshake for `url` with `options` and `mask` (the connection's masking keys).
    pub fn new(
        url: &url::Url,
        options: handshake::ClientOptions,
        mask: MaskSource,
    ) -> Result<Self, Error> {
        let handshake = ClientHandshake::new(url, options, mask)?;
        let mut request = WriteBuf::new(512, 0);
        handshake.write_request(&mut request)?;
        Ok(Self {
            handshake,
            request,
            received: ReadBuf::with_capacity(4 << 10),
            accepted: None,
        })
    }

    /// The request to write, whole, before reading.
    pub fn request(&self) -> &[u8] {
        self.request.as_slice()
    }

    /// Where the transport reads the response into.
    pub fn received(&mut self) -> &mut ReadBuf {
        &mut self.received
    }

    /// True once the response read so far is a 101 the request accepts; false when more
    /// bytes are needed. An error is the server's refusal or a response that breaks the
    /// handshake (see [`ClientHandshake::read_response`]).
    pub fn read_response(&mut self, now: Instant) -> Result<bool, Error> {
        if self.accepted.is_none() {
            match self.handshake.read_response(&mut self.received, now)? {
                Parsed::Complete(accepted) => self.accepted = Some(accepted),
                Parsed::NeedMore => return Ok(false),
            }
        }
        Ok(true)
    }

    /// The open connection, once [`read_response`](Self::read_response) returned true
    /// (`None` before).
    pub fn into_opened(self) -> Option<Opened> {
        let accepted = self.accepted?;
        let buffers = Buffers::with_read(self.received, accepted.connection.config());
        Some(Opened {
            connection: accepted.connection,
            buffers,
            subprotocol: accepted.subprotocol,
            #[cfg(feature = "deflate")]
            deflate: accepted.deflate,
        })
    }
}

/// The server's opening handshake on one accepted stream: the request read, the caller's
/// decision answered, and what the answer means once it is written.
#[derive(Debug)]
pub struct ServerOpening<'o> {
    handshake: ServerHandshake<'o>,
    received: ReadBuf,
    answer: WriteBuf,
}

/// What [`ServerOpening::respond`] decided, for [`ServerOpening::conclude`] once the answer
/// is written.
#[derive(Debug)]
#[must_use]
pub struct Responded(Result<Outcome, HandshakeError>);

impl<'o> ServerOpening<'o> {
    /// The handshake with `options`.
    pub fn new(options: &'o handshake::ServerOptions) -> Self {
        Self {
            handshake: ServerHandshake::new(options),
            received: ReadBuf::with_capacity(4 << 10),
            answer: WriteBuf::new(512, 0),
        }
    }

    /// Where the transport reads the request into.
    pub fn received(&mut self) -> &mut ReadBuf {
        &mut self.received
    }

    /// The request, once its head is complete (`None`: read more). An error is a request
    /// that cannot be upgraded: write [`answer`](Self::answer) (the refusal, best effort: the
    /// client may be gone), then return the error.
    pub fn read_request(&mut self) -> Result<Option<Request>, Error> {
        match self
            .handshake
            .read_request(&mut self.received, &mut self.answer)
        {
            Ok(Parsed::Complete(request)) => Ok(Some(request)),
            Ok(Parsed::NeedMore) => Ok(None),
            Err(error) => Err(Error::Handshake(error)),
        }
    }

    /// Answers the request with the caller's `response` (the 101 or a refusal), into
    /// [`answer`](Self::answer); write it, then [`conclude`](Self::conclude).
    pub fn respond(&mut self, response: Response, now: Instant) -> Responded {
        Responded(self.handshake.respond(response, &mut self.answer, now))
    }

    /// The bytes to write: the answer to the request.
    pub fn answer(&self) -> &[u8] {
        self.answer.as_slice()
    }

    /// What the answer meant, once the transport wrote it (`written`): the open connection,
    /// whose receive buffer holds the bytes that followed the request (they become frames
    /// only now, after the 101), [`Error::Rejected`] for the caller's refusal, or the
    /// handshake's error. A failed write fails an upgrade or a refusal.
    pub fn conclude(
        self,
        responded: Responded,
        written: Result<(), Error>,
    ) -> Result<Opened, Error> {
        match responded.0 {
            Ok(Outcome::Upgraded(upgraded)) => {
                written?;
                let buffers = Buffers::with_read(self.received, upgraded.connection.config());
                Ok(Opened {
                    connection: upgraded.connection,
                    buffers,
                    subprotocol: upgraded.subprotocol,
                    #[cfg(feature = "deflate")]
                    deflate: upgraded.deflate,
                })
            }
            Ok(Outcome::Rejected(status)) => {
                written?;
                Err(Error::Rejected(status))
            }
            Err(error) => Err(Error::Handshake(error)),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use tickwire_codec::handshake::{self, Response};
    use tickwire_codec::ws::{MaskSource, Message};

    use super::*;

    fn client(url: &str) -> ClientOpening {
        let url = parse_url(url).unwrap();
        ClientOpening::new(
            &url,
            handshake::ClientOptions::default(),
            MaskSource::seeded(7),
        )
        .unwrap()
    }

    /// The server reads what the client wrote, in pieces; the request, once whole.
    fn read_in_pieces(server: &mut ServerOpening<'_>, bytes: &[u8]) -> Request {
        for piece in bytes.chunks(9) {
            server.received().extend_from_slice(piece);
            if let Some(request) = server.read_request().unwrap() {
                return request;
            }
        }
        panic!("the request never completed");
    }

    #[test]
    fn a_client_and_a_server_opening_open_a_pair_and_keep_what_followed() {
        let mut client = client("ws://example.test/feed");
        let options = handshake::ServerOptions::default();
        let mut server = ServerOpening::new(&options);
        let request = read_in_pieces(&mut server, client.request());
        let responded = server.respond(Response::accept(&request), Instant::now());
        let mut answer = server.answer().to_vec();
        let mut opened = server.conclude(responded, Ok(())).unwrap();
        assert_eq!(opened.connection.config().read_buffer_size, 16 << 10);

        // A frame that arrives with the 101 is parsed from the client's buffers.
        let mut sender = opened.connection.sender(&mut opened.buffers);
        sender.text("first").unwrap();
        answer.extend_from_slice(opened.connection.output(&opened.buffers));
        client.received().extend_from_slice(&answer);
        assert!(client.read_response(Instant::now()).unwrap());
        let mut opened = client.into_opened().unwrap();
        let Opened {
            connection,
            buffers,
            ..
        } = &mut opened;
        assert_eq!(
            connection.poll(buffers).unwrap(),
            tickwire_codec::ws::Event::Message(Message::Text("first"))
        );
    }

    #[test]
    fn a_refusal_is_rejected_after_its_answer_is_written_and_a_failed_write_fails_the_upgrade() {
        let options = handshake::ServerOptions::default();
        let mut server = ServerOpening::new(&options);
        let request = read_in_pieces(&mut server, client("ws://example.test/").request());
        let responded = server.respond(Response::reject(403), Instant::now());
        assert!(server.answer().starts_with(b"HTTP/1.1 403"));
        assert!(matches!(
            server.conclude(responded, Ok(())),
            Err(Error::Rejected(403))
        ));

        let mut server = ServerOpening::new(&options);
        let request_bytes = client("ws://example.test/").request().to_vec();
        let again = read_in_pieces(&mut server, &request_bytes);
        assert_eq!(again.path(), request.path());
        let responded = server.respond(Response::accept(&again), Instant::now());
        let gone = Err(Error::UnexpectedEof);
        assert!(matches!(
            server.conclude(responded, gone),
            Err(Error::UnexpectedEof)
        ));
    }

    #[test]
    fn a_response_still_coming_is_not_opened_and_bad_urls_are_typed() {
        let mut client = client("ws://example.test/");
        client
            .received()
            .extend_from_slice(b"HTTP/1.1 101 Switching");
        assert!(!client.read_response(Instant::now()).unwrap());
        assert!(client.into_opened().is_none());

        assert!(matches!(parse_url("not a url"), Err(Error::InvalidUrl(_))));
        let http = parse_url("http://example.test/").unwrap();
        assert!(matches!(endpoint(&http), Err(Error::InvalidUrl(_))));
        let secure = parse_url("wss://example.test/").unwrap();
        assert_eq!(endpoint(&secure).is_ok(), cfg!(feature = "tls"));
    }
}
