//! Real proxies on loopback for the connect-path tests, installed by `scripts/proxies.sh`:
//! tinyproxy (HTTP CONNECT) and microsocks (SOCKS5), each with or without credentials;
//! tinyproxy behind stunnel (TLS to the proxy: an `https://` proxy); and a fake proxy that
//! accepts and closes at once. Each process is killed when its handle is dropped.

use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::thread;
use std::time::{Duration, Instant};

/// The user name and password of the proxies started with credentials.
pub const USER: &str = "alice";
/// See [`USER`].
pub const PASSWORD: &str = "s3cret";

/// The proxies' binaries, installed once per test binary.
fn binary(name: &str) -> PathBuf {
    static BINARIES: OnceLock<Vec<(String, PathBuf)>> = OnceLock::new();
    let binaries = BINARIES.get_or_init(|| {
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scripts/proxies.sh");
        let output = Command::new("bash")
            .arg(script)
            .stderr(Stdio::inherit())
            .output()
            .expect("run scripts/proxies.sh");
        assert!(output.status.success(), "scripts/proxies.sh failed");
        String::from_utf8(output.stdout)
            .unwrap()
            .lines()
            .filter_map(|line| line.split_once(' '))
            .map(|(name, path)| (name.to_owned(), PathBuf::from(path)))
            .collect()
    });
    binaries
        .iter()
        .find(|(tool, _)| tool == name)
        .map(|(_, path)| path.clone())
        .unwrap_or_else(|| panic!("scripts/proxies.sh did not name {name}"))
}

/// A free port on 127.0.0.1 (bound, then released for the proxy to take).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Waits until something listens on `port` (a proxy that just started).
fn wait_listening(port: u16, child: &mut Child, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        if let Ok(Some(status)) = child.try_wait() {
            panic!("{what} exited at start: {status}");
        }
        assert!(Instant::now() < deadline, "{what} did not listen on {port}");
        thread::sleep(Duration::from_millis(10));
    }
}

/// A running proxy process.
pub struct Proxy {
    child: Child,
    scheme: &'static str,
    port: u16,
    credentials: bool,
    _config: Option<tempfile_path::TempPath>,
    /// What runs in front of it (stunnel, for an `https://` proxy), its files.
    front: Option<(Child, Vec<tempfile_path::TempPath>)>,
}

impl Proxy {
    /// tinyproxy, an HTTP CONNECT proxy allowing every port, asking for [`USER`] /
    /// [`PASSWORD`] when `credentials`.
    pub fn tinyproxy(credentials: bool) -> Self {
        let port = free_port();
        let mut config = format!(
            "Port {port}\nListen 127.0.0.1\nTimeout 30\nLogLevel Critical\nMaxClients 50\n"
        );
        if credentials {
            config.push_str(&format!("BasicAuth {USER} {PASSWORD}\n"));
        }
        let path = tempfile_path::TempPath::with(&format!("tinyproxy-{port}.conf"), &config);
        let mut child = Command::new(binary("tinyproxy"))
            .args(["-d", "-c"])
            .arg(path.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start tinyproxy");
        wait_listening(port, &mut child, "tinyproxy");
        Self {
            child,
            scheme: "http",
            port,
            credentials,
            _config: Some(path),
            front: None,
        }
    }

    /// tinyproxy behind stunnel on 127.0.0.1: an `https://` proxy, TLS to it with the
    /// certificate chain `chain_pem` and its key `key_pem` (a certificate for `127.0.0.1`),
    /// HTTP CONNECT inside, asking for [`USER`] / [`PASSWORD`] when `credentials`.
    pub fn tinyproxy_tls(credentials: bool, chain_pem: &str, key_pem: &str) -> Self {
        let mut proxy = Self::tinyproxy(credentials);
        let port = free_port();
        let chain = tempfile_path::TempPath::with(&format!("stunnel-{port}.crt"), chain_pem);
        let key = tempfile_path::TempPath::with(&format!("stunnel-{port}.key"), key_pem);
        let config = format!(
            "foreground = yes\npid =\ndebug = 0\n[proxy]\naccept = 127.0.0.1:{port}\n\
             connect = 127.0.0.1:{}\ncert = {}\nkey = {}\n",
            proxy.port,
            chain.path().display(),
            key.path().display()
        );
        let config = tempfile_path::TempPath::with(&format!("stunnel-{port}.conf"), &config);
        let mut child = Command::new(binary("stunnel"))
            .arg(config.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start stunnel");
        wait_listening(port, &mut child, "stunnel");
        proxy.scheme = "https";
        proxy.port = port;
        proxy.front = Some((child, vec![chain, key, config]));
        proxy
    }

    /// microsocks, a SOCKS5 proxy, asking for [`USER`] / [`PASSWORD`] when `credentials`;
    /// its URL is `socks5h://` (the proxy resolves names).
    pub fn microsocks(credentials: bool) -> Self {
        let port = free_port();
        let mut command = Command::new(binary("microsocks"));
        command.args(["-i", "127.0.0.1", "-p", &port.to_string()]);
        if credentials {
            command.args(["-u", USER, "-P", PASSWORD]);
        }
        let mut child = command
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start microsocks");
        wait_listening(port, &mut child, "microsocks");
        Self {
            child,
            scheme: "socks5h",
            port,
            credentials,
            _config: None,
            front: None,
        }
    }

    /// The proxy's URL, with the right credentials when it asks for them.
    pub fn url(&self) -> String {
        self.url_with(USER, PASSWORD)
    }

    /// The proxy's URL with these credentials (when it asks for any).
    pub fn url_with(&self, user: &str, password: &str) -> String {
        if self.credentials {
            format!(
                "{}://{user}:{password}@127.0.0.1:{}",
                self.scheme, self.port
            )
        } else {
            format!("{}://127.0.0.1:{}", self.scheme, self.port)
        }
    }

    /// The same URL with the scheme `scheme` (`socks5` to resolve names locally).
    pub fn url_as(&self, scheme: &str) -> String {
        let url = self.url();
        format!("{scheme}{}", &url[url.find("://").unwrap()..])
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        if let Some((front, _)) = &mut self.front {
            let _ = front.kill();
            let _ = front.wait();
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A "proxy" on 127.0.0.1 that accepts each connection, reads what the client sent and
/// closes it without a word (a FIN: nothing is left unread to turn it into a reset): a proxy
/// that dies mid-handshake. Returns its port; the thread ends with the test process.
pub fn closing_proxy() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let _ = stream.set_read_timeout(Some(Duration::from_millis(100)));
            let mut sink = [0u8; 512];
            while let Ok(1..) = std::io::Read::read(&mut stream, &mut sink) {}
            drop(stream);
        }
    });
    port
}

/// An HTTP server on 127.0.0.1 for one request: reads its head, answers `200 OK` with the
/// body `ok`, and returns the head it read. Returns its port and the thread to join.
pub fn http_once() -> (u16, thread::JoinHandle<String>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = thread::spawn(move || {
        let (mut tcp, _) = listener.accept().unwrap();
        let mut head = Vec::new();
        let mut byte = [0u8; 1];
        while !head.ends_with(b"\r\n\r\n") && std::io::Read::read(&mut tcp, &mut byte).unwrap() == 1
        {
            head.push(byte[0]);
        }
        std::io::Write::write_all(&mut tcp, b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
            .unwrap();
        String::from_utf8(head).unwrap()
    });
    (port, server)
}

mod tempfile_path {
    //! A file under the system's temporary directory, removed when dropped.

    use std::path::{Path, PathBuf};

    pub(super) struct TempPath(PathBuf);

    impl TempPath {
        /// `name` (made unique by the process id) holding `text`.
        pub(super) fn with(name: &str, text: &str) -> Self {
            let path = std::env::temp_dir().join(format!("tickwire-{}-{name}", std::process::id()));
            std::fs::write(&path, text).expect("write a temporary file");
            Self(path)
        }

        pub(super) fn path(&self) -> &Path {
            &self.0
        }
    }

    impl Drop for TempPath {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }
}
