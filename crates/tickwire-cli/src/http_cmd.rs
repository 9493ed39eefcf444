//! `tickwire http METHOD URL`: one request with the library's HTTP client (blocking, or
//! tickwire-tokio's with `--runtime tokio`), curl-style output.

use std::io::Write;

use clap::Args;
use tickwire::blocking::codec::http::{Headers, Method, StatusCode, Version};
use tickwire::blocking::{ClientTlsConfig, HttpClient};
use tickwire::http::HttpClientBuilder;

#[derive(Args)]
pub(crate) struct HttpArgs {
    /// GET, HEAD, POST, PUT, PATCH, DELETE or OPTIONS (any case).
    method: String,
    /// http:// or https:// URL, with the query if any.
    url: String,
    /// Request header, `Name: value` (repeatable).
    #[arg(short = 'H', long = "header", value_name = "NAME: VALUE")]
    headers: Vec<String>,
    /// Request body; `@FILE` reads it from a file.
    #[arg(short = 'd', long = "data", value_name = "BODY")]
    data: Option<String>,
    /// Print the status line and the response headers before the body.
    #[arg(short = 'i', long = "include")]
    include: bool,
    /// Ask for gzip (Accept-Encoding) and print the inflated body.
    #[cfg(feature = "deflate")]
    #[arg(long)]
    compressed: bool,
    /// https://: also trust the CA certificates in this PEM file.
    #[arg(long, value_name = "FILE")]
    ca: Option<String>,
    /// https://: accept any server certificate (no chain, name or expiry check). Test
    /// servers only.
    #[arg(long)]
    insecure: bool,
    /// The longest the whole request may take (connect, request, response): seconds as
    /// curl takes them (2, 0.5) or a duration (500ms).
    #[arg(short = 'm', long, value_name = "SECONDS", value_parser = crate::parse_seconds)]
    max_time: Option<std::time::Duration>,
    #[command(flatten)]
    net: crate::NetArgs,
}

/// Runs the request on the blocking client; `Err` is the one stderr line for a usage or
/// transport failure. An HTTP error status is a response like any other (printed, exit status
/// 0), as with curl.
pub(crate) fn run(args: &HttpArgs) -> Result<(), String> {
    let plan = Plan::of(args)?;
    let mut client = client_builder(HttpClient::builder(&plan.origin), args)?
        .build()
        .map_err(|e| e.to_string())?;
    let mut request = client
        .request(plan.method, &plan.target)
        .header("Accept", "*/*");
    for (name, value) in &plan.headers {
        request = request.header(name, value);
    }
    let response = match &plan.body {
        Some(body) => request.send_body(body),
        None => request.send(),
    }
    .map_err(|e| e.to_string())?;
    let head = (response.version(), response.status(), response.reason());
    print_response(args.include, head, response.headers(), response.body())
}

/// [`run`] on tickwire-tokio's async client (`--runtime tokio`), on a current-thread runtime:
/// the same request on the wire, the same output and exit status.
pub(crate) fn run_tokio(args: &HttpArgs) -> Result<(), String> {
    let plan = Plan::of(args)?;
    let mut client = client_builder(tickwire::tokio::HttpClient::builder(&plan.origin), args)?
        .build()
        .map_err(|e| e.to_string())?;
    let response = crate::tokio_ws::current_thread()?.block_on(async {
        let mut request = client
            .request(plan.method, &plan.target)
            .header("Accept", "*/*");
        for (name, value) in &plan.headers {
            request = request.header(name, value);
        }
        match &plan.body {
            Some(body) => request.send_body(body).await,
            None => request.send().await,
        }
        .map_err(|e| e.to_string())
    })?;
    let head = (response.version(), response.status(), response.reason());
    print_response(args.include, head, response.headers(), response.body())
}

/// The client's options (gzip, TLS) on an `HttpClientBuilder` of either runtime.
fn client_builder<T>(
    builder: HttpClientBuilder<T>,
    args: &HttpArgs,
) -> Result<HttpClientBuilder<T>, String> {
    #[cfg(feature = "deflate")]
    let builder = builder.gzip(args.compressed);
    let builder = match client_tls(args)? {
        Some(tls) => builder.tls(tls),
        None => builder,
    };
    let (connect, timeout) = args.net.connect()?;
    let builder = builder.connect_options(connect);
    let builder = match timeout {
        Some(timeout) => builder.connect_timeout(Some(timeout)),
        None => builder,
    };
    Ok(match args.max_time {
        Some(max) => builder.request_deadline(Some(max)),
        None => builder,
    })
}

/// What the command line asks for, checked before any connection is made.
struct Plan<'a> {
    method: Method,
    origin: String,
    /// The path and query as typed.
    target: String,
    headers: Vec<(&'a str, &'a str)>,
    body: Option<Vec<u8>>,
}

impl<'a> Plan<'a> {
    fn of(args: &'a HttpArgs) -> Result<Self, String> {
        let method = Method::from_token(args.method.to_ascii_uppercase().as_bytes())
            .filter(|m| !matches!(m, Method::Connect | Method::Trace))
            .ok_or_else(|| format!("unsupported method {:?}", args.method))?;
        let url =
            url::Url::parse(&args.url).map_err(|e| format!("invalid URL {:?}: {e}", args.url))?;
        let origin = match url.port() {
            Some(port) => format!("{}://{}:{port}", url.scheme(), url.host_str().unwrap_or("")),
            None => format!("{}://{}", url.scheme(), url.host_str().unwrap_or("")),
        };
        let body = match args.data.as_deref() {
            Some(file) if file.starts_with('@') => {
                Some(std::fs::read(&file[1..]).map_err(|e| format!("{}: {e}", &file[1..]))?)
            }
            Some(data) => Some(data.as_bytes().to_vec()),
            None => None,
        };
        // The target goes out as typed (the URL parser only percent-encodes what may not
        // appear raw): decoding the query and encoding it again would turn `+01:00` into
        // ` 01:00`.
        let target = url[url::Position::BeforePath..url::Position::AfterQuery].to_owned();
        let mut headers = Vec::with_capacity(args.headers.len());
        for header in &args.headers {
            let (name, value) = header
                .split_once(':')
                .ok_or_else(|| format!("-H {header:?} is not 'Name: value'"))?;
            headers.push((name.trim(), value.trim()));
        }
        Ok(Self {
            method,
            origin,
            target,
            headers,
            body,
        })
    }
}

/// curl-style output: with `-i` the status line and the headers, then the body.
fn print_response(
    include: bool,
    (version, status, reason): (Version, StatusCode, &str),
    headers: Headers<'_>,
    body: &[u8],
) -> Result<(), String> {
    let mut out = std::io::stdout().lock();
    let mut write = || -> std::io::Result<()> {
        if include {
            writeln!(out, "{} {status} {reason}\r", version.as_str())?;
            for (name, value) in headers.iter() {
                out.write_all(name.as_bytes())?;
                out.write_all(b": ")?;
                out.write_all(value)?;
                out.write_all(b"\r\n")?;
            }
            out.write_all(b"\r\n")?;
        }
        out.write_all(body)?;
        out.flush()
    };
    write().map_err(|e| format!("stdout: {e}"))
}

fn client_tls(args: &HttpArgs) -> Result<Option<ClientTlsConfig>, String> {
    if args.ca.is_none() && !args.insecure {
        return Ok(None);
    }
    let mut builder = ClientTlsConfig::builder();
    if let Some(ca) = &args.ca {
        builder = builder.add_root_pem_file(ca).map_err(|e| e.to_string())?;
    }
    if args.insecure {
        builder = builder.dangerous().disable_certificate_verification();
    }
    builder.build().map(Some).map_err(|e| e.to_string())
}
