//! [`ClientTlsConfig`] and [`ServerTlsConfig`]: rustls configurations built from PEM, made
//! once and shared by every connection (a shared client config is also what lets a second
//! connection resume the first one's session).

use std::path::Path;
use std::sync::{Arc, OnceLock};

use rustls::client::Resumption;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, verify_tls12_signature, verify_tls13_signature};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::server::WebPkiClientVerifier;
use rustls::{DigitallySignedStruct, RootCertStore, SignatureScheme, SupportedProtocolVersion};

use crate::TlsError;

#[cfg(not(any(feature = "ring", feature = "aws-lc-rs")))]
compile_error!("tickwire-tls needs a crypto provider: enable the `ring` or `aws-lc-rs` feature");

/// The crypto provider this build uses: aws-lc-rs when its feature is on, else ring.
pub fn provider() -> Arc<CryptoProvider> {
    static PROVIDER: OnceLock<Arc<CryptoProvider>> = OnceLock::new();
    PROVIDER
        .get_or_init(|| {
            #[cfg(feature = "aws-lc-rs")]
            let provider = rustls::crypto::aws_lc_rs::default_provider();
            #[cfg(all(feature = "ring", not(feature = "aws-lc-rs")))]
            let provider = rustls::crypto::ring::default_provider();
            Arc::new(provider)
        })
        .clone()
}

fn versions(tls13_only: bool) -> &'static [&'static SupportedProtocolVersion] {
    static TLS13_ONLY: [&SupportedProtocolVersion; 1] = [&rustls::version::TLS13];
    if tls13_only {
        &TLS13_ONLY
    } else {
        rustls::DEFAULT_VERSIONS
    }
}

/// Every certificate in a PEM bundle; an error when there is none.
pub fn certificates_from_pem(pem: &[u8]) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let certs = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| TlsError::Config(format!("certificate PEM: {e}")))?;
    if certs.is_empty() {
        return Err(TlsError::Config("no CERTIFICATE block in the PEM".into()));
    }
    Ok(certs)
}

/// The first private key (PKCS#8, PKCS#1 or SEC1) in a PEM file.
pub fn private_key_from_pem(pem: &[u8]) -> Result<PrivateKeyDer<'static>, TlsError> {
    PrivateKeyDer::from_pem_slice(pem)
        .map_err(|e| TlsError::Config(format!("private key PEM: {e}")))
}

fn read_file(path: &Path) -> Result<Vec<u8>, TlsError> {
    std::fs::read(path).map_err(|e| TlsError::Config(format!("{}: {e}", path.display())))
}

fn root_store(certs: &[CertificateDer<'static>], webpki: bool) -> Result<RootCertStore, TlsError> {
    let mut roots = RootCertStore::empty();
    if webpki {
        roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    }
    for cert in certs {
        roots
            .add(cert.clone())
            .map_err(|e| TlsError::Config(format!("root certificate: {e}")))?;
    }
    Ok(roots)
}

/// A client TLS configuration, cheap to clone and share between connections.
#[derive(Debug, Clone)]
pub struct ClientTlsConfig {
    inner: Arc<rustls::ClientConfig>,
}

impl ClientTlsConfig {
    /// Starts from the defaults: Mozilla's roots (webpki-roots), TLS 1.2 and 1.3, session
    /// resumption on, no ALPN, no client certificate, verification on.
    pub fn builder() -> ClientTlsBuilder {
        ClientTlsBuilder::default()
    }

    /// The default configuration, built once per process and shared, so that connections
    /// made with it resume each other's sessions.
    pub fn shared_default() -> Self {
        static DEFAULT: OnceLock<ClientTlsConfig> = OnceLock::new();
        DEFAULT
            .get_or_init(|| {
                Self::builder()
                    .build()
                    .expect("the default configuration is valid")
            })
            .clone()
    }

    /// Wraps a rustls configuration built elsewhere.
    pub fn from_rustls(config: Arc<rustls::ClientConfig>) -> Self {
        Self { inner: config }
    }

    /// The rustls configuration.
    pub fn rustls(&self) -> &Arc<rustls::ClientConfig> {
        &self.inner
    }
}

/// Builds a [`ClientTlsConfig`].
#[derive(Debug)]
pub struct ClientTlsBuilder {
    webpki_roots: bool,
    roots: Vec<CertificateDer<'static>>,
    identity: Option<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>)>,
    alpn: Vec<Vec<u8>>,
    tls13_only: bool,
    resumption: bool,
    verify: bool,
}

impl Default for ClientTlsBuilder {
    fn default() -> Self {
        Self {
            webpki_roots: true,
            roots: Vec::new(),
            identity: None,
            alpn: Vec::new(),
            tls13_only: false,
            resumption: true,
            verify: true,
        }
    }
}

impl ClientTlsBuilder {
    /// Trusts Mozilla's root set, compiled in by webpki-roots (default on). Turn it off to
    /// trust only the roots added here (a private CA).
    pub fn webpki_roots(mut self, on: bool) -> Self {
        self.webpki_roots = on;
        self
    }

    /// Also trusts every certificate in a PEM bundle (a private or corporate CA).
    pub fn add_root_pem(mut self, pem: &[u8]) -> Result<Self, TlsError> {
        self.roots.extend(certificates_from_pem(pem)?);
        Ok(self)
    }

    /// [`add_root_pem`](Self::add_root_pem) from a file.
    pub fn add_root_pem_file(self, path: impl AsRef<Path>) -> Result<Self, TlsError> {
        let pem = read_file(path.as_ref())?;
        self.add_root_pem(&pem)
    }

    /// Also trusts one DER certificate.
    pub fn add_root_der(mut self, cert: CertificateDer<'static>) -> Self {
        self.roots.push(cert);
        self
    }

    /// Presents this certificate chain (leaf first) and key when the server asks for one
    /// (mutual TLS).
    pub fn client_identity_pem(
        mut self,
        chain_pem: &[u8],
        key_pem: &[u8],
    ) -> Result<Self, TlsError> {
        self.identity = Some((
            certificates_from_pem(chain_pem)?,
            private_key_from_pem(key_pem)?,
        ));
        Ok(self)
    }

    /// [`client_identity_pem`](Self::client_identity_pem) from files.
    pub fn client_identity_pem_files(
        self,
        chain: impl AsRef<Path>,
        key: impl AsRef<Path>,
    ) -> Result<Self, TlsError> {
        let chain = read_file(chain.as_ref())?;
        let key = read_file(key.as_ref())?;
        self.client_identity_pem(&chain, &key)
    }

    /// Offers these ALPN protocols, most preferred first (`b"http/1.1"`).
    pub fn alpn<P: Into<Vec<u8>>>(mut self, protocols: impl IntoIterator<Item = P>) -> Self {
        self.alpn = protocols.into_iter().map(Into::into).collect();
        self
    }

    /// Refuses TLS 1.2 (default: 1.2 and 1.3 are offered).
    pub fn tls13_only(mut self, on: bool) -> Self {
        self.tls13_only = on;
        self
    }

    /// Session resumption (default on: an in-memory cache of 256 sessions, shared by the
    /// connections of one config). A resumed handshake skips certificate transfer and
    /// verification.
    pub fn session_resumption(mut self, on: bool) -> Self {
        self.resumption = on;
        self
    }

    /// Settings that weaken security. Named so that they stand out in review.
    pub fn dangerous(self) -> DangerousClientTls {
        DangerousClientTls { builder: self }
    }

    /// Builds the configuration.
    pub fn build(self) -> Result<ClientTlsConfig, TlsError> {
        let provider = provider();
        let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
            .with_protocol_versions(versions(self.tls13_only))
            .map_err(|e| TlsError::Config(e.to_string()))?;
        let builder = if self.verify {
            builder.with_root_certificates(root_store(&self.roots, self.webpki_roots)?)
        } else {
            builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(NoVerification(provider)))
        };
        let mut config = match self.identity {
            Some((chain, key)) => builder
                .with_client_auth_cert(chain, key)
                .map_err(|e| TlsError::Config(format!("client certificate: {e}")))?,
            None => builder.with_no_client_auth(),
        };
        config.alpn_protocols = self.alpn;
        if !self.resumption {
            config.resumption = Resumption::disabled();
        }
        Ok(ClientTlsConfig {
            inner: Arc::new(config),
        })
    }
}

/// The weakening settings of a [`ClientTlsBuilder`].
#[derive(Debug)]
pub struct DangerousClientTls {
    builder: ClientTlsBuilder,
}

impl DangerousClientTls {
    /// Accepts any server certificate: no chain, name or expiry check (handshake signatures
    /// are still verified). Anyone on the path can read and change the traffic; use it only
    /// against a test server.
    pub fn disable_certificate_verification(mut self) -> ClientTlsBuilder {
        self.builder.verify = false;
        self.builder
    }
}

/// The verifier behind `disable_certificate_verification`.
#[derive(Debug)]
struct NoVerification(Arc<CryptoProvider>);

impl ServerCertVerifier for NoVerification {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// A server TLS configuration, cheap to clone and share between connections.
#[derive(Debug, Clone)]
pub struct ServerTlsConfig {
    inner: Arc<rustls::ServerConfig>,
}

impl ServerTlsConfig {
    /// Starts from a certificate chain (leaf first) and its private key, in PEM. Defaults:
    /// TLS 1.2 and 1.3, no client authentication, no ALPN, an in-memory session cache.
    pub fn builder(chain_pem: &[u8], key_pem: &[u8]) -> Result<ServerTlsBuilder, TlsError> {
        Ok(ServerTlsBuilder {
            chain: certificates_from_pem(chain_pem)?,
            key: private_key_from_pem(key_pem)?,
            client_auth: None,
            alpn: Vec::new(),
            tls13_only: false,
        })
    }

    /// [`builder`](Self::builder) from files (`--tls-cert`, `--tls-key`).
    pub fn builder_from_files(
        chain: impl AsRef<Path>,
        key: impl AsRef<Path>,
    ) -> Result<ServerTlsBuilder, TlsError> {
        Self::builder(&read_file(chain.as_ref())?, &read_file(key.as_ref())?)
    }

    /// Wraps a rustls configuration built elsewhere.
    pub fn from_rustls(config: Arc<rustls::ServerConfig>) -> Self {
        Self { inner: config }
    }

    /// The rustls configuration.
    pub fn rustls(&self) -> &Arc<rustls::ServerConfig> {
        &self.inner
    }
}

/// Builds a [`ServerTlsConfig`].
#[derive(Debug)]
pub struct ServerTlsBuilder {
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
    client_auth: Option<(Vec<CertificateDer<'static>>, bool)>,
    alpn: Vec<Vec<u8>>,
    tls13_only: bool,
}

impl ServerTlsBuilder {
    /// Asks clients for a certificate issued by one of these roots (PEM) and refuses the
    /// handshake without one (mutual TLS).
    pub fn client_auth_required(mut self, roots_pem: &[u8]) -> Result<Self, TlsError> {
        self.client_auth = Some((certificates_from_pem(roots_pem)?, true));
        Ok(self)
    }

    /// Asks clients for a certificate issued by one of these roots (PEM); a client without
    /// one is still accepted, a client with a bad one is refused.
    pub fn client_auth_optional(mut self, roots_pem: &[u8]) -> Result<Self, TlsError> {
        self.client_auth = Some((certificates_from_pem(roots_pem)?, false));
        Ok(self)
    }

    /// Selects among these ALPN protocols, in the server's order of preference. A client
    /// offering ALPN with none of them is refused (RFC 7301 §3.2).
    pub fn alpn<P: Into<Vec<u8>>>(mut self, protocols: impl IntoIterator<Item = P>) -> Self {
        self.alpn = protocols.into_iter().map(Into::into).collect();
        self
    }

    /// Refuses TLS 1.2.
    pub fn tls13_only(mut self, on: bool) -> Self {
        self.tls13_only = on;
        self
    }

    /// Builds the configuration. Fails when the key does not match the certificate.
    pub fn build(self) -> Result<ServerTlsConfig, TlsError> {
        let provider = provider();
        let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
            .with_protocol_versions(versions(self.tls13_only))
            .map_err(|e| TlsError::Config(e.to_string()))?;
        let builder = match self.client_auth {
            None => builder.with_no_client_auth(),
            Some((roots, required)) => {
                let roots = Arc::new(root_store(&roots, false)?);
                let verifier = WebPkiClientVerifier::builder_with_provider(roots, provider);
                let verifier = if required {
                    verifier
                } else {
                    verifier.allow_unauthenticated()
                };
                let verifier = verifier
                    .build()
                    .map_err(|e| TlsError::Config(format!("client verifier: {e}")))?;
                builder.with_client_cert_verifier(verifier)
            }
        };
        let mut config = builder
            .with_single_cert(self.chain, self.key)
            .map_err(|e| TlsError::Config(format!("certificate and key: {e}")))?;
        config.alpn_protocols = self.alpn;
        Ok(ServerTlsConfig {
            inner: Arc::new(config),
        })
    }
}
