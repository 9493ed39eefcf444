//! What the packet tests share: certificates generated with rcgen (a CA, a server leaf for
//! 127.0.0.1 and localhost, a client leaf for mutual TLS), loopback listeners and an echo
//! server.

use std::time::Duration;

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DistinguishedName, DnType,
    ExtendedKeyUsagePurpose, IsCa, KeyPair, KeyUsagePurpose,
};
use tokio::net::TcpListener;

use tickwire_tokio::packet::{PacketClientBuilder, PacketServer, ServerHandle};
use tickwire_tokio::{ClientTlsConfig, ServerTlsConfig};

/// The bound on every wait.
pub(crate) const PATIENCE: Duration = Duration::from_secs(10);

/// A client builder whose waits are bounded by [`PATIENCE`], lending its buffers out while
/// idle (so every test runs that path too).
pub(crate) fn builder() -> PacketClientBuilder {
    PacketClientBuilder::new()
        .connect_timeout(PATIENCE)
        .request_timeout(Some(PATIENCE))
        .release_idle_buffers(true)
}

/// A listener on a free 127.0.0.1 port and the port.
pub(crate) async fn listen() -> (TcpListener, u16) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    (listener, port)
}

/// `server` spawned on a free port, answering every request with its payload, lending its
/// buffers out while idle.
pub(crate) async fn echo_server(server: PacketServer) -> (ServerHandle, u16) {
    let (listener, port) = listen().await;
    let handle = server
        .release_idle_buffers(true)
        .spawn(listener, |_, request, responder| {
            responder.respond(request).unwrap();
        })
        .unwrap();
    (handle, port)
}

/// A certificate and its key, PEM.
pub(crate) struct Identity {
    pub(crate) cert_pem: String,
    pub(crate) key_pem: String,
}

/// A test CA that issues server and client certificates.
pub(crate) struct Ca {
    issuer: CertifiedIssuer<'static, KeyPair>,
}

impl Ca {
    pub(crate) fn new() -> Self {
        let mut params = CertificateParams::default();
        params.distinguished_name = name("tickwire-tokio packet test CA");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        Self {
            issuer: CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap(),
        }
    }

    pub(crate) fn pem(&self) -> String {
        self.issuer.pem()
    }

    fn issue(&self, names: &[&str], purpose: ExtendedKeyUsagePurpose) -> Identity {
        let names = names.iter().map(|n| (*n).to_owned()).collect::<Vec<_>>();
        let mut params = CertificateParams::new(names).unwrap();
        params.distinguished_name = name("leaf");
        params.is_ca = IsCa::ExplicitNoCa;
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        params.extended_key_usages = vec![purpose];
        let key = KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &self.issuer).unwrap();
        Identity {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        }
    }

    /// The server configuration for 127.0.0.1 and localhost; with `client_auth`, client
    /// certificates from this CA are required (mutual TLS).
    pub(crate) fn server(&self, client_auth: bool) -> ServerTlsConfig {
        let me = self.issue(
            &["127.0.0.1", "localhost"],
            ExtendedKeyUsagePurpose::ServerAuth,
        );
        let mut builder =
            ServerTlsConfig::builder(me.cert_pem.as_bytes(), me.key_pem.as_bytes()).unwrap();
        if client_auth {
            builder = builder.client_auth_required(self.pem().as_bytes()).unwrap();
        }
        builder.build().unwrap()
    }

    /// A client configuration trusting this CA; with `identity`, it presents a client
    /// certificate.
    pub(crate) fn client(&self, identity: bool) -> ClientTlsConfig {
        let mut builder = ClientTlsConfig::builder()
            .webpki_roots(false)
            .add_root_pem(self.pem().as_bytes())
            .unwrap();
        if identity {
            let me = self.issue(&["risk-engine"], ExtendedKeyUsagePurpose::ClientAuth);
            builder = builder
                .client_identity_pem(me.cert_pem.as_bytes(), me.key_pem.as_bytes())
                .unwrap();
        }
        builder.build().unwrap()
    }
}

fn name(common: &str) -> DistinguishedName {
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, common);
    dn
}
