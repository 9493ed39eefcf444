//! What the TLS codec tests share: certificates made with rcgen (a private CA, the leaves and
//! intermediates it signs), configurations built from them, and [`Pair`], an in-memory client
//! and server [`TlsCodec`] with the pumps that move ciphertext between them. No sockets.

use std::sync::{Arc, OnceLock};

use rcgen::{
    BasicConstraints, CertificateParams, CustomExtension, DnType, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use tickwire_tls::{
    ClientTlsBuilder, ClientTlsConfig, Plaintext, ServerTlsConfig, TlsCodec, TlsError, provider,
    rustls,
};

/// The name every test leaf is issued for (besides 127.0.0.1 and ::1).
pub(crate) const HOST: &str = "localhost";

/// A certificate authority: a root, or an intermediate together with the chain above it.
pub(crate) struct Ca {
    issuer: Issuer<'static, KeyPair>,
    /// This CA's certificate in PEM.
    pem: String,
    /// What a server sends after the leaf for a leaf this CA signs: nothing for a root, else
    /// this intermediate and those above it (not the root), in PEM.
    chain_tail_pem: String,
}

/// A certificate chain (leaf first) and its private key, in PEM.
#[derive(Debug, Clone)]
pub(crate) struct Identity {
    pub(crate) chain_pem: String,
    pub(crate) key_pem: String,
}

impl Ca {
    /// A self-signed root named `name`.
    pub(crate) fn root(name: &str) -> Self {
        let key = KeyPair::generate().expect("key");
        let params = ca_params(name);
        let cert = params.self_signed(&key).expect("root certificate");
        Self {
            issuer: Issuer::new(params, key),
            pem: cert.pem(),
            chain_tail_pem: String::new(),
        }
    }

    /// This CA's own certificate in PEM (the one to trust, for a root).
    pub(crate) fn pem(&self) -> &str {
        &self.pem
    }

    /// This CA's private key in PEM.
    pub(crate) fn key_pem(&self) -> String {
        self.issuer.key().serialize_pem()
    }

    /// An intermediate CA signed by this one, carrying `padding` bytes in a private extension.
    pub(crate) fn intermediate(&self, name: &str, padding: usize) -> Self {
        let key = KeyPair::generate().expect("key");
        let mut params = ca_params(name);
        params.custom_extensions.extend(padding_extension(padding));
        let pem = params
            .signed_by(&key, &self.issuer)
            .expect("intermediate")
            .pem();
        Self {
            issuer: Issuer::new(params, key),
            chain_tail_pem: pem.clone() + &self.chain_tail_pem,
            pem,
        }
    }

    /// A leaf for `localhost`, 127.0.0.1 and ::1, valid from 1975 to 4096.
    pub(crate) fn leaf(&self) -> Identity {
        self.leaf_with(leaf_params(&[HOST, "127.0.0.1", "::1"]))
    }

    /// A leaf from these parameters, signed by this CA; its chain holds the intermediates
    /// between this CA and the root.
    pub(crate) fn leaf_with(&self, params: CertificateParams) -> Identity {
        let key = KeyPair::generate().expect("key");
        let cert = params.signed_by(&key, &self.issuer).expect("leaf");
        Identity {
            chain_pem: cert.pem() + &self.chain_tail_pem,
            key_pem: key.serialize_pem(),
        }
    }
}

/// Parameters of an end-entity certificate for these names (DNS names or IP addresses).
pub(crate) fn leaf_params(names: &[&str]) -> CertificateParams {
    let names: Vec<String> = names.iter().map(|name| (*name).to_owned()).collect();
    let mut params = CertificateParams::new(names).expect("names");
    params
        .distinguished_name
        .push(DnType::CommonName, "tickwire test leaf");
    params
}

fn ca_params(name: &str) -> CertificateParams {
    let mut params = CertificateParams::new(Vec::<String>::new()).expect("params");
    params.distinguished_name.push(DnType::CommonName, name);
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    params
}

/// A self-signed certificate that is no CA of anything here, `padding` bytes larger than
/// usual: filler a server may send in its chain (verifiers ignore certificates that are not
/// on the path).
pub(crate) fn unrelated_certificate_pem(name: &str, padding: usize) -> String {
    let key = KeyPair::generate().expect("key");
    let mut params = ca_params(name);
    params.custom_extensions.extend(padding_extension(padding));
    params.self_signed(&key).expect("certificate").pem()
}

/// A non-critical extension under a private OID whose value is `len` bytes of DER
/// OCTET STRING: ignored by verifiers, it only makes the certificate larger.
fn padding_extension(len: usize) -> Option<CustomExtension> {
    if len == 0 {
        return None;
    }
    let len = u16::try_from(len).expect("padding under 64 KiB");
    let mut content = vec![0x04, 0x82];
    content.extend_from_slice(&len.to_be_bytes());
    content.resize(4 + usize::from(len), 0x5a);
    Some(CustomExtension::from_oid_content(
        &[1, 3, 6, 1, 4, 1, 55555, 1],
        content,
    ))
}

/// The PKI most tests use, made once per test binary: a root and a leaf it signs directly.
pub(crate) struct Pki {
    pub(crate) ca: Ca,
    pub(crate) leaf: Identity,
}

pub(crate) fn pki() -> &'static Pki {
    static PKI: OnceLock<Pki> = OnceLock::new();
    PKI.get_or_init(|| {
        let ca = Ca::root("tickwire test root");
        let leaf = ca.leaf();
        Pki { ca, leaf }
    })
}

/// A client builder that trusts the test root only.
pub(crate) fn client_builder() -> ClientTlsBuilder {
    ClientTlsConfig::builder()
        .webpki_roots(false)
        .add_root_pem(pki().ca.pem().as_bytes())
        .expect("root PEM")
}

/// A client configuration that trusts the test root only.
pub(crate) fn client_config() -> ClientTlsConfig {
    client_builder().build().expect("client config")
}

/// A server configuration presenting `identity`.
pub(crate) fn server_config_for(identity: &Identity) -> ServerTlsConfig {
    ServerTlsConfig::builder(identity.chain_pem.as_bytes(), identity.key_pem.as_bytes())
        .expect("identity PEM")
        .build()
        .expect("server config")
}

/// A server configuration presenting the test leaf.
pub(crate) fn server_config() -> ServerTlsConfig {
    server_config_for(&pki().leaf)
}

/// A server that speaks TLS 1.2 only (the builder offers no such switch: rustls directly).
pub(crate) fn tls12_server_config(identity: &Identity) -> ServerTlsConfig {
    let chain = tickwire_tls::certificates_from_pem(identity.chain_pem.as_bytes()).expect("chain");
    let key = tickwire_tls::private_key_from_pem(identity.key_pem.as_bytes()).expect("key");
    let config = rustls::ServerConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS12])
        .expect("TLS 1.2")
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .expect("certificate and key");
    ServerTlsConfig::from_rustls(Arc::new(config))
}

/// The same server configuration, sending application data right after its first TLS 1.3
/// flight (0.5-RTT), so that handshake records and application data travel together.
pub(crate) fn with_half_rtt(config: &ServerTlsConfig) -> ServerTlsConfig {
    let mut rustls = rustls::ServerConfig::clone(config.rustls());
    rustls.send_half_rtt_data = true;
    ServerTlsConfig::from_rustls(Arc::new(rustls))
}

/// Every ciphertext byte `codec` has queued, taken through `write_tls` in 4 KiB pieces.
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
    }
}

/// Feeds all of `wire` to `codec` in pieces of the given sizes (cycled; whole when empty),
/// reading the plaintext that becomes available after every piece into `plaintext` through
/// a 1000-byte buffer.
pub(crate) fn feed_pieces(
    codec: &mut TlsCodec,
    wire: &[u8],
    pieces: &[usize],
    plaintext: &mut Vec<u8>,
) -> Result<(), TlsError> {
    let mut sizes = pieces.iter().copied().cycle();
    let mut at = 0;
    while at < wire.len() {
        let end = match sizes.next() {
            Some(size) => (at + size.max(1)).min(wire.len()),
            None => wire.len(),
        };
        let mut piece = &wire[at..end];
        while !piece.is_empty() {
            let taken = codec.read_tls(piece)?;
            piece = &piece[taken..];
            let read = read_available(codec, plaintext)?;
            assert!(
                taken > 0 || read > 0,
                "read_tls took nothing and no plaintext waits"
            );
        }
        at = end;
    }
    Ok(())
}

/// [`feed_pieces`] in one piece.
pub(crate) fn feed(
    codec: &mut TlsCodec,
    wire: &[u8],
    plaintext: &mut Vec<u8>,
) -> Result<(), TlsError> {
    feed_pieces(codec, wire, &[], plaintext)
}

/// Reads the plaintext available now into `plaintext` through a 1000-byte buffer; returns
/// how many bytes that was.
pub(crate) fn read_available(
    codec: &mut TlsCodec,
    plaintext: &mut Vec<u8>,
) -> Result<usize, TlsError> {
    let mut buf = [0u8; 1000];
    let mut total = 0;
    while let Plaintext::Data(n) = codec.read_plaintext(&mut buf)? {
        plaintext.extend_from_slice(&buf[..n]);
        total += n;
    }
    Ok(total)
}

/// A client and a server codec joined by in-memory pumps.
#[derive(Debug)]
pub(crate) struct Pair {
    pub(crate) client: TlsCodec,
    pub(crate) server: TlsCodec,
    /// Plaintext each side has read so far.
    pub(crate) client_received: Vec<u8>,
    pub(crate) server_received: Vec<u8>,
}

impl Pair {
    /// A client for [`HOST`] and a server.
    pub(crate) fn new(client: &ClientTlsConfig, server: &ServerTlsConfig) -> Self {
        Self::with_host(client, server, HOST)
    }

    /// A client for `host` and a server.
    pub(crate) fn with_host(
        client: &ClientTlsConfig,
        server: &ServerTlsConfig,
        host: &str,
    ) -> Self {
        Self {
            client: TlsCodec::client(client, host).expect("client codec"),
            server: TlsCodec::server(server).expect("server codec"),
            client_received: Vec::new(),
            server_received: Vec::new(),
        }
    }

    /// Moves what the client has queued to the server; returns how many bytes that was.
    pub(crate) fn client_to_server(&mut self) -> Result<usize, TlsError> {
        let wire = drain(&mut self.client);
        feed(&mut self.server, &wire, &mut self.server_received)?;
        Ok(wire.len())
    }

    /// Moves what the server has queued to the client; returns how many bytes that was.
    pub(crate) fn server_to_client(&mut self) -> Result<usize, TlsError> {
        let wire = drain(&mut self.server);
        feed(&mut self.client, &wire, &mut self.client_received)?;
        Ok(wire.len())
    }

    /// Pumps both ways until the handshake is done and nothing is queued (TLS 1.3 tickets
    /// included), or the first error. The side that failed keeps its alert queued.
    pub(crate) fn handshake(&mut self) -> Result<(), TlsError> {
        for _ in 0..16 {
            let moved = self.client_to_server()? + self.server_to_client()?;
            if moved == 0 && !self.client.is_handshaking() && !self.server.is_handshaking() {
                return Ok(());
            }
        }
        panic!("the handshake did not settle in 16 round trips");
    }

    /// [`handshake`](Self::handshake), which must succeed.
    pub(crate) fn connected(client: &ClientTlsConfig, server: &ServerTlsConfig) -> Self {
        let mut pair = Self::new(client, server);
        pair.handshake().expect("handshake");
        pair
    }
}
