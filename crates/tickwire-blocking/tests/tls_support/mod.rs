//! What the TLS tests share: certificates generated at test time with rcgen (a CA, leaves, a
//! long chain), server and client configurations, a loopback TLS echo server, and raw TCP
//! peers that break the TLS handshake on purpose.
//!
//! Every peer listens on 127.0.0.1 and every wait is bounded by [`PATIENCE`], so a broken
//! build fails a test instead of hanging it.

use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::Duration;

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, CustomExtension, DistinguishedName,
    DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair, KeyUsagePurpose, date_time_ymd,
};
use tickwire_blocking::tls::rustls::pki_types::CertificateDer;
use tickwire_blocking::tls::rustls::server::WebPkiClientVerifier;
use tickwire_blocking::tls::rustls::{self, RootCertStore, SupportedProtocolVersion};
use tickwire_blocking::tls::{TlsCodec, certificates_from_pem, private_key_from_pem, provider};
use tickwire_blocking::{
    ClientBuilder, ClientTlsConfig, CloseCode, Error, Message, Recv, ServerBuilder,
    ServerTlsConfig, TlsStream, Transport, WebSocket,
};

/// The bound on every wait (handshakes, reads, joins through them) unless a test sets a
/// shorter one on purpose.
pub(crate) const PATIENCE: Duration = Duration::from_secs(10);

/// A private key and the certificate chain (leaf first) that goes with it.
#[derive(Debug, Clone)]
pub(crate) struct Identity {
    pub(crate) chain_pem: String,
    pub(crate) key_pem: String,
    /// The leaf certificate, to compare with what the peer saw.
    pub(crate) leaf: CertificateDer<'static>,
}

/// A certificate authority that issues leaf certificates (which are never CAs themselves:
/// webpki refuses a CA certificate as an end entity).
pub(crate) struct Ca {
    issuer: CertifiedIssuer<'static, KeyPair>,
}

impl Ca {
    /// A self-signed root named `name`.
    pub(crate) fn new(name: &str) -> Self {
        let issuer =
            CertifiedIssuer::self_signed(ca_params(name), KeyPair::generate().unwrap()).unwrap();
        Self { issuer }
    }

    /// The root certificate in PEM, for a peer to trust.
    pub(crate) fn pem(&self) -> String {
        self.issuer.pem()
    }

    /// A server certificate for `names` (DNS names or IP addresses), valid now.
    pub(crate) fn server_cert(&self, names: &[&str]) -> Identity {
        self.issue(leaf_params(names, ExtendedKeyUsagePurpose::ServerAuth))
    }

    /// A server certificate for `names` that expired in 2020.
    pub(crate) fn expired_server_cert(&self, names: &[&str]) -> Identity {
        let mut params = leaf_params(names, ExtendedKeyUsagePurpose::ServerAuth);
        params.not_before = date_time_ymd(2019, 1, 1);
        params.not_after = date_time_ymd(2020, 1, 1);
        self.issue(params)
    }

    /// A server certificate for `names` that becomes valid in 2999.
    pub(crate) fn future_server_cert(&self, names: &[&str]) -> Identity {
        let mut params = leaf_params(names, ExtendedKeyUsagePurpose::ServerAuth);
        params.not_before = date_time_ymd(2999, 1, 1);
        params.not_after = date_time_ymd(3000, 1, 1);
        self.issue(params)
    }

    /// A client certificate (mutual TLS) for `name`.
    pub(crate) fn client_cert(&self, name: &str) -> Identity {
        self.issue(leaf_params(&[name], ExtendedKeyUsagePurpose::ClientAuth))
    }

    fn issue(&self, params: CertificateParams) -> Identity {
        let key = KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &self.issuer).unwrap();
        Identity {
            chain_pem: cert.pem(),
            key_pem: key.serialize_pem(),
            leaf: cert.der().clone(),
        }
    }
}

/// A chain root -> `intermediates` CAs -> leaf for "localhost" and 127.0.0.1, every
/// certificate padded with a `padding`-byte private extension so the chain is large.
pub(crate) struct LongChain {
    /// Every certificate, root first.
    pub(crate) certificates: Vec<CertificateDer<'static>>,
    /// The leaf's key and the whole chain, leaf first, root last: what the server sends.
    pub(crate) server: Identity,
}

impl LongChain {
    pub(crate) fn new(intermediates: usize, padding: usize) -> Self {
        let mut issuers = vec![
            CertifiedIssuer::self_signed(padded(ca_params("root"), padding), keypair()).unwrap(),
        ];
        for i in 1..=intermediates {
            let params = padded(ca_params(&format!("intermediate {i}")), padding);
            let parent = issuers.last().unwrap();
            issuers.push(CertifiedIssuer::signed_by(params, keypair(), parent).unwrap());
        }
        let key = keypair();
        let params = padded(
            leaf_params(
                &["localhost", "127.0.0.1"],
                ExtendedKeyUsagePurpose::ServerAuth,
            ),
            padding,
        );
        let leaf = params.signed_by(&key, issuers.last().unwrap()).unwrap();
        let mut certificates: Vec<_> = issuers.iter().map(|ca| ca.der().clone()).collect();
        certificates.push(leaf.der().clone());
        let chain_pem = std::iter::once(leaf.pem())
            .chain(issuers.iter().rev().map(|ca| ca.pem()))
            .collect();
        Self {
            certificates,
            server: Identity {
                chain_pem,
                key_pem: key.serialize_pem(),
                leaf: leaf.der().clone(),
            },
        }
    }
}

fn keypair() -> KeyPair {
    KeyPair::generate().unwrap()
}

fn ca_params(name: &str) -> CertificateParams {
    let mut params = CertificateParams::default();
    params.distinguished_name = common_name(&format!("tickwire test CA {name}"));
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    params
}

fn leaf_params(names: &[&str], purpose: ExtendedKeyUsagePurpose) -> CertificateParams {
    let names: Vec<String> = names.iter().map(|name| name.to_string()).collect();
    let mut params = CertificateParams::new(names.clone()).unwrap();
    params.distinguished_name = common_name(&names[0]);
    params.is_ca = IsCa::ExplicitNoCa;
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    params.extended_key_usages = vec![purpose];
    params
}

fn common_name(name: &str) -> DistinguishedName {
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, name);
    dn
}

/// Adds a non-critical extension under the documentation arc (RFC 5612, PEN 32473) holding
/// `len` bytes: verifiers skip it, and it makes the certificate `len` bytes larger.
fn padded(mut params: CertificateParams, len: usize) -> CertificateParams {
    let len16 = u16::try_from(len).unwrap().to_be_bytes();
    // DER OCTET STRING with a two-byte length (X.690 §8.1.3.5).
    let mut content = vec![0x04, 0x82, len16[0], len16[1]];
    content.resize(content.len() + len, 0xA5);
    params
        .custom_extensions
        .push(CustomExtension::from_oid_content(
            &[1, 3, 6, 1, 4, 1, 32473, 1],
            content,
        ));
    params
}

/// The tickwire server configuration for `identity` (TLS 1.2 and 1.3).
pub(crate) fn server_config(identity: &Identity) -> ServerTlsConfig {
    ServerTlsConfig::builder(identity.chain_pem.as_bytes(), identity.key_pem.as_bytes())
        .unwrap()
        .build()
        .unwrap()
}

/// A server configuration built with rustls directly: only `versions`, and client
/// certificates from `client_ca` required when given.
pub(crate) fn rustls_server_config(
    identity: &Identity,
    versions: &[&'static SupportedProtocolVersion],
    client_ca: Option<&Ca>,
) -> ServerTlsConfig {
    let builder = rustls::ServerConfig::builder_with_provider(provider())
        .with_protocol_versions(versions)
        .unwrap();
    let builder = match client_ca {
        None => builder.with_no_client_auth(),
        Some(ca) => {
            let mut roots = RootCertStore::empty();
            roots.add(ca.issuer.der().clone()).unwrap();
            let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider())
                .build()
                .unwrap();
            builder.with_client_cert_verifier(verifier)
        }
    };
    let config = builder
        .with_single_cert(
            certificates_from_pem(identity.chain_pem.as_bytes()).unwrap(),
            private_key_from_pem(identity.key_pem.as_bytes()).unwrap(),
        )
        .unwrap();
    ServerTlsConfig::from_rustls(Arc::new(config))
}

/// A client configuration that trusts `ca` only (not Mozilla's roots).
pub(crate) fn client_config(ca: &Ca) -> ClientTlsConfig {
    ClientTlsConfig::builder()
        .webpki_roots(false)
        .add_root_pem(ca.pem().as_bytes())
        .unwrap()
        .build()
        .unwrap()
}

/// A client with `tls` whose handshake and reads are bounded.
pub(crate) fn client(tls: &ClientTlsConfig) -> ClientBuilder {
    ClientBuilder::new()
        .tls(tls.clone())
        .handshake_timeout(PATIENCE)
        .read_timeout(Some(PATIENCE))
}

/// The server side of one TLS connection: what `accept_tls` returned.
pub(crate) type Accepted = Result<WebSocket<TlsStream<TcpStream>>, Error>;

/// Accepts `connections` connections one after the other on 127.0.0.1 with `tls` and hands
/// each `accept_tls` result to `serve`; returns the port and the thread, which returns what
/// `serve` returned for each.
pub(crate) fn tls_server<T: Send + 'static>(
    tls: ServerTlsConfig,
    connections: usize,
    mut serve: impl FnMut(Accepted) -> T + Send + 'static,
) -> (u16, JoinHandle<Vec<T>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let builder = ServerBuilder::new()
        .handshake_timeout(PATIENCE)
        .read_timeout(Some(PATIENCE));
    let handle = thread::spawn(move || {
        (0..connections)
            .map(|_| {
                let (stream, _) = listener.accept().unwrap();
                serve(builder.accept_tls(stream, &tls))
            })
            .collect()
    });
    (port, handle)
}

/// Echoes text and binary messages until the peer's close, then finishes the connection;
/// returns how many were echoed.
pub(crate) fn echo<S: Transport>(ws: &mut WebSocket<S>) -> Result<usize, Error> {
    let mut echoed = 0;
    while let (Recv::Message(message), mut sender) = ws.recv_with_sender()? {
        match message {
            Message::Text(text) => sender.text(text)?,
            Message::Binary(data) => sender.binary(data)?,
            _ => continue,
        }
        echoed += 1;
    }
    ws.finish()?;
    Ok(echoed)
}

/// Sends `text`, expects it back, then closes the connection normally.
pub(crate) fn echo_once_and_close<S: Transport>(ws: &mut WebSocket<S>, text: &str) {
    ws.send_text_now(text).unwrap();
    assert_eq!(ws.recv().unwrap(), Recv::Message(Message::Text(text)));
    close(ws);
}

/// The client's close handshake: close, the server's reply, end of stream, then the server's
/// TCP close.
pub(crate) fn close<S: Transport>(ws: &mut WebSocket<S>) {
    ws.close(CloseCode::NORMAL, "done").unwrap();
    match ws.recv().unwrap() {
        Recv::Closed(Some(frame)) => assert_eq!(frame.code, CloseCode::NORMAL),
        other => panic!("expected the close reply, got {other:?}"),
    }
    ws.finish().unwrap();
}

/// A raw TCP peer on 127.0.0.1 that runs `serve` on the first connection, with bounded reads
/// and writes.
pub(crate) fn raw_server<T: Send + 'static>(
    serve: impl FnOnce(TcpStream) -> T + Send + 'static,
) -> (u16, JoinHandle<T>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let handle = thread::spawn(move || {
        let (stream, _) = listener.accept().unwrap();
        bound(&stream);
        serve(stream)
    });
    (port, handle)
}

/// Bounds reads and writes on a raw socket.
pub(crate) fn bound(stream: &TcpStream) {
    stream.set_read_timeout(Some(PATIENCE)).unwrap();
    stream.set_write_timeout(Some(PATIENCE)).unwrap();
}

/// Reads one whole TLS record (header and body).
pub(crate) fn read_record(stream: &mut TcpStream) -> Vec<u8> {
    let mut record = vec![0u8; 5];
    stream.read_exact(&mut record).unwrap();
    let len = u16::from_be_bytes([record[3], record[4]]) as usize;
    record.resize(5 + len, 0);
    stream.read_exact(&mut record[5..]).unwrap();
    record
}

/// Writes `bytes`, closes the write direction, then reads until the peer closes, so that
/// closing the socket never turns into a reset that could overtake what was written.
pub(crate) fn write_then_close(stream: &mut TcpStream, bytes: &[u8]) -> Vec<u8> {
    stream.write_all(bytes).unwrap();
    stream.shutdown(Shutdown::Write).unwrap();
    read_to_eof(stream)
}

/// Everything the peer sends until it closes (or a reset, or [`PATIENCE`]).
pub(crate) fn read_to_eof(stream: &mut TcpStream) -> Vec<u8> {
    let mut received = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        match stream.read(&mut chunk) {
            Ok(0) => return received,
            Ok(n) => received.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => return received,
        }
    }
}

/// A real ClientHello record, as a tickwire client sends it for "localhost".
pub(crate) fn client_hello() -> Vec<u8> {
    let config = ClientTlsConfig::builder().build().unwrap();
    let mut codec = TlsCodec::client(&config, "localhost").unwrap();
    let mut hello = vec![0u8; 16 * 1024];
    let n = codec.write_tls(&mut hello);
    hello.truncate(n);
    assert_eq!(hello[0], 0x16, "a handshake record");
    hello
}
