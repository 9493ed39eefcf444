//! The certificates and TLS configurations every TLS workload uses: a private CA and a leaf for
//! 127.0.0.1 made with rcgen once per process, the server configuration pinned to TLS 1.3 and
//! TLS13_AES_128_GCM_SHA256, and one client configuration per library, each trusting only that
//! CA and running on ring.
//!
//! Owns setup only; nothing here is timed. Every client verifies the server certificate
//! against the CA (no verification is switched off), so the handshake each library does is
//! the one a user of it would do against a private CA.

use std::sync::{Arc, OnceLock};

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::CertificateDer;
use tickwire_tls::{ClientTlsConfig, ServerTlsConfig};

/// The one cipher suite every workload negotiates (the server offers nothing else).
pub const CIPHER_SUITE: &str = "TLS13_AES_128_GCM_SHA256";

/// The host every client connects to; the leaf names it as an IP address SAN.
pub const HOST: &str = "127.0.0.1";

/// The generated certificates, in PEM and DER.
struct Pki {
    ca_pem: String,
    ca_der: CertificateDer<'static>,
    chain_pem: String,
    key_pem: String,
}

/// Made on first use: an ECDSA P-256 CA and a leaf it signs for 127.0.0.1 and localhost.
fn pki() -> &'static Pki {
    static PKI: OnceLock<Pki> = OnceLock::new();
    PKI.get_or_init(|| {
        let ca_key = KeyPair::generate().expect("rcgen: CA key");
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("rcgen: CA");
        ca_params
            .distinguished_name
            .push(DnType::CommonName, "tickwire-bench CA");
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let ca_cert = ca_params.self_signed(&ca_key).expect("rcgen: sign the CA");
        let issuer = Issuer::new(ca_params, ca_key);
        let leaf_key = KeyPair::generate().expect("rcgen: leaf key");
        let mut leaf_params = CertificateParams::new(vec![HOST.to_owned(), "localhost".into()])
            .expect("rcgen: leaf names");
        leaf_params
            .distinguished_name
            .push(DnType::CommonName, "tickwire-bench server");
        let leaf = leaf_params
            .signed_by(&leaf_key, &issuer)
            .expect("rcgen: sign the leaf");
        Pki {
            ca_pem: ca_cert.pem(),
            ca_der: ca_cert.der().clone(),
            chain_pem: leaf.pem(),
            key_pem: leaf_key.serialize_pem(),
        }
    })
}

/// The leaf's chain and key as PEM, for a TLS front that is not tickwire (stunnel).
pub fn leaf_pem() -> (&'static str, &'static str) {
    (&pki().chain_pem, &pki().key_pem)
}

/// ring's provider as tickwire-tls uses it (its default feature).
fn ring() -> Arc<CryptoProvider> {
    tickwire_tls::provider()
}

/// The server configuration of every TLS workload: the leaf, TLS 1.3 only, and ring with
/// [`CIPHER_SUITE`] as its only cipher suite, so every client negotiates the same record
/// protection whatever it prefers.
pub fn server_config() -> ServerTlsConfig {
    let pki = pki();
    let pinned = CryptoProvider {
        cipher_suites: vec![rustls::crypto::ring::cipher_suite::TLS13_AES_128_GCM_SHA256],
        ..CryptoProvider::clone(&ring())
    };
    let chain = tickwire_tls::certificates_from_pem(pki.chain_pem.as_bytes())
        .expect("the generated chain parses");
    let key = tickwire_tls::private_key_from_pem(pki.key_pem.as_bytes())
        .expect("the generated key parses");
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(pinned))
        .with_protocol_versions(&[&rustls::version::TLS13])
        .expect("ring supports TLS 1.3")
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .expect("the generated key matches its certificate");
    ServerTlsConfig::from_rustls(Arc::new(config))
}

/// tickwire's client configuration: its builder with the CA as the only root, TLS 1.3 only
/// (otherwise its defaults: verification and session resumption on).
pub fn tickwire_client_config() -> ClientTlsConfig {
    ClientTlsConfig::builder()
        .webpki_roots(false)
        .add_root_pem(pki().ca_pem.as_bytes())
        .expect("the generated CA parses")
        .tls13_only(true)
        .build()
        .expect("a valid client configuration")
}

/// A plain rustls client configuration on ring with the CA as the only root, TLS 1.3 only:
/// what tokio-tungstenite gets through `Connector::Rustls`, and the in-memory floor.
pub fn rustls_client_config() -> Arc<rustls::ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(pki().ca_der.clone())
        .expect("the generated CA is a valid root");
    let config = rustls::ClientConfig::builder_with_provider(ring())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .expect("ring supports TLS 1.3")
        .with_root_certificates(roots)
        .with_no_client_auth();
    Arc::new(config)
}

/// nexus-web's client configuration through its own builder: the CA as the only root (no
/// system roots loaded), TLS 1.3 only.
///
/// nexus-web builds its rustls configuration with the process-default crypto provider (its
/// `TlsConfig` cannot be made from a rustls one), and its `tls` feature compiles rustls with
/// aws-lc-rs as well as ring, so there is no default until one is installed: ring is
/// installed here, and the configuration is checked to use it.
pub fn nexus_client_config() -> nexus_web::tls::TlsConfig {
    static INSTALLED: OnceLock<()> = OnceLock::new();
    INSTALLED.get_or_init(|| {
        // Err only when a default is already installed: nothing else in this process does.
        let _ = CryptoProvider::clone(&ring()).install_default();
    });
    let config = nexus_web::tls::TlsConfig::builder()
        .skip_system_certs()
        .add_root_cert(pki().ca_der.clone())
        .tls13_only()
        .build()
        .expect("nexus-web: a valid client configuration");
    let default = CryptoProvider::get_default().expect("a default provider was installed");
    assert!(
        Arc::ptr_eq(config.client_config().crypto_provider(), default),
        "nexus-web: its configuration does not use the installed ring provider"
    );
    config
}
