//! What the modes share: the input reader ([`Bytes`]), the configurations built once from a
//! certificate rcgen generates at startup ([`configs`]), and the checks every codec call
//! makes: a typed error, a failure for good, bounded output.

use std::io;
use std::sync::{Arc, OnceLock};

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
use tickwire_tls::{
    ClientTlsConfig, Plaintext, ServerTlsConfig, TlsCodec, TlsError, provider, rustls,
};

/// The name the test certificate is issued for.
pub(crate) const HOST: &str = "localhost";

/// Most ciphertext one codec may queue in one go before the oracle calls it unbounded.
const MAX_QUEUED: usize = 1 << 20;

pub(crate) use crate::input::Bytes;

/// The configurations, built once: a root, a leaf for [`HOST`] it signs, and servers and
/// clients around them. Clients do not resume: every run makes a full handshake.
pub(crate) struct Configs {
    pub(crate) client: ClientTlsConfig,
    pub(crate) client_alpn: ClientTlsConfig,
    pub(crate) server: ServerTlsConfig,
    pub(crate) server_alpn: ServerTlsConfig,
    pub(crate) server_half_rtt: ServerTlsConfig,
    pub(crate) server_tls12: ServerTlsConfig,
}

pub(crate) fn configs() -> &'static Configs {
    static CONFIGS: OnceLock<Configs> = OnceLock::new();
    CONFIGS.get_or_init(|| {
        let ca_key = KeyPair::generate().expect("key");
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("params");
        ca_params
            .distinguished_name
            .push(DnType::CommonName, "tickwire fuzz root");
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let ca_pem = ca_params.self_signed(&ca_key).expect("root").pem();
        let issuer = Issuer::new(ca_params, ca_key);
        let leaf_key = KeyPair::generate().expect("key");
        let leaf_params = CertificateParams::new(vec![HOST.to_owned()]).expect("params");
        let chain_pem = leaf_params
            .signed_by(&leaf_key, &issuer)
            .expect("leaf")
            .pem();
        let key_pem = leaf_key.serialize_pem();

        let client = || {
            ClientTlsConfig::builder()
                .webpki_roots(false)
                .add_root_pem(ca_pem.as_bytes())
                .expect("root")
                .session_resumption(false)
        };
        let server = || {
            ServerTlsConfig::builder(chain_pem.as_bytes(), key_pem.as_bytes()).expect("identity")
        };
        let server_alpn = server().alpn(["http/1.1"]).build().expect("server");
        let mut half_rtt = rustls::ServerConfig::clone(server_alpn.rustls());
        half_rtt.send_half_rtt_data = true;
        let tls12 = rustls::ServerConfig::builder_with_provider(provider())
            .with_protocol_versions(&[&rustls::version::TLS12])
            .expect("TLS 1.2")
            .with_no_client_auth()
            .with_cert_resolver(server_alpn.rustls().cert_resolver.clone());
        Configs {
            client: client().build().expect("client"),
            client_alpn: client().alpn(["h2", "http/1.1"]).build().expect("client"),
            server: server().build().expect("server"),
            server_alpn,
            server_half_rtt: ServerTlsConfig::from_rustls(Arc::new(half_rtt)),
            server_tls12: ServerTlsConfig::from_rustls(Arc::new(tls12)),
        }
    })
}

/// Every ciphertext byte `codec` has queued, through `write_tls` in pieces; bounded.
pub(crate) fn drain(codec: &mut TlsCodec) -> Vec<u8> {
    let mut wire = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let n = codec.write_tls(&mut chunk);
        if n == 0 {
            assert!(
                !codec.wants_write(),
                "write_tls wrote nothing yet wants to write"
            );
            return wire;
        }
        wire.extend_from_slice(&chunk[..n]);
        assert!(
            wire.len() <= MAX_QUEUED,
            "more than {MAX_QUEUED} bytes queued"
        );
    }
}

/// What reading the available plaintext found.
#[derive(Debug, Default)]
pub(crate) struct Read {
    pub(crate) bytes: usize,
    pub(crate) close_notify: bool,
    pub(crate) eof: bool,
}

/// Reads the plaintext available now into `plaintext` (through a 300-byte buffer, bounded by
/// `limit` bytes in all).
pub(crate) fn read_available(
    codec: &mut TlsCodec,
    plaintext: &mut Vec<u8>,
    limit: usize,
) -> Result<Read, TlsError> {
    let mut buf = [0u8; 300];
    let mut read = Read::default();
    loop {
        match codec.read_plaintext(&mut buf)? {
            Plaintext::Data(n) => {
                assert!(n > 0 && n <= buf.len());
                plaintext.extend_from_slice(&buf[..n]);
                assert!(plaintext.len() <= limit, "more plaintext than was sent");
                read.bytes += n;
            }
            Plaintext::NeedMore => return Ok(read),
            Plaintext::CloseNotify => {
                read.close_notify = true;
                return Ok(read);
            }
            Plaintext::Eof => {
                read.eof = true;
                return Ok(read);
            }
        }
    }
}

/// An error from received bytes names a cause on the wire, never the configuration.
pub(crate) fn check_typed(error: &TlsError) {
    assert!(
        !matches!(error, TlsError::Config(_) | TlsError::InvalidServerName(_)),
        "a configuration error from received bytes: {error:?}"
    );
    assert!(!error.to_string().is_empty());
}

/// After a failure every call returns that failure, and the codec says so.
pub(crate) fn check_failed_for_good(codec: &mut TlsCodec, error: &TlsError) {
    check_typed(error);
    assert_eq!(codec.error(), Some(error));
    assert_eq!(
        codec.read_tls(b"\x17\x03\x03\x00\x01x").as_ref(),
        Err(error)
    );
    assert_eq!(codec.read_tls(&[]).as_ref(), Err(error));
    let from_reader = codec.read_tls_from(&mut io::empty()).unwrap_err();
    assert_eq!(from_reader.kind(), io::ErrorKind::InvalidData);
    assert_eq!(from_reader.to_string(), error.to_string());
    assert_eq!(codec.read_plaintext(&mut [0u8; 8]).as_ref(), Err(error));
    assert_eq!(codec.write_plaintext(b"x").as_ref(), Err(error));
    // What is owed to the peer (an alert) can still be written, and is bounded.
    drain(codec);
    assert_eq!(codec.error(), Some(error));
}
