//! The async client's pool against nginx (`--runtime tokio` only): concurrent requests share a
//! few warm connections. The connections are counted twice: by the client
//! (`HttpClient::connections_opened`) and by nginx, whose access log (interop/http/servers.sh
//! writes `$connection` first on every line) names the connection that served each request.

use std::path::Path;

use tokio::runtime::Runtime;
use tokio::task::JoinSet;

use super::{Outcome, ensure};

/// Requests in flight at once, and the pool's cap.
const CONCURRENT: usize = 8;
/// Rounds of CONCURRENT requests.
const ROUNDS: usize = 50;
/// The file every request fetches, and its size.
const FILE: (&str, usize) = ("1k.bin", 1024);

pub(super) fn concurrent_reuse(
    runtime: &Runtime,
    base: &str,
    access_log: Option<&Path>,
) -> Outcome {
    let client = tickwire_tokio::HttpClient::builder(base)
        .max_connections(CONCURRENT)
        .build()
        .map_err(|e| format!("build: {e}"))?;
    // A mark of this run in every request, so its lines in the access log are found.
    let mark = format!("pool-{}", std::process::id());
    let path = format!("/files/{}", FILE.0);
    runtime.block_on(async {
        for round in 0..ROUNDS {
            let mut tasks = JoinSet::new();
            for i in 0..CONCURRENT {
                let mut client = client.clone();
                let path = path.clone();
                let mark = mark.clone();
                tasks.spawn(async move {
                    let request = client.get(&path).query("run", &mark).query_display("i", i);
                    let response = request
                        .send()
                        .await
                        .map_err(|e| format!("round {round}, request {i}: {e}"))?;
                    ensure(
                        response.status().0 == 200 && response.body().len() == FILE.1,
                        || {
                            format!(
                                "round {round}, request {i}: status {}, {} B",
                                response.status().0,
                                response.body().len()
                            )
                        },
                    )
                });
            }
            while let Some(joined) = tasks.join_next().await {
                joined.map_err(|e| format!("task: {e}"))??;
            }
        }
        Ok::<_, String>(())
    })?;
    let requests = ROUNDS * CONCURRENT;
    let opened = client.connections_opened();
    ensure(opened >= 1 && opened <= CONCURRENT as u64, || {
        format!("{requests} requests opened {opened} connections, expected 1..={CONCURRENT}")
    })?;
    let Some(log) = access_log else {
        return Ok(format!(
            "{requests} requests, {CONCURRENT} at a time: connections_opened() = {opened}"
        ));
    };
    // nginx logs a request once its response is sent, which may be just after the client
    // has it: wait (bounded) for the last lines.
    let mut counted = nginx_connections(log, &mark)?;
    for _ in 0..20 {
        if counted.0 >= requests {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
        counted = nginx_connections(log, &mark)?;
    }
    let (served, connections) = counted;
    ensure(served == requests, || {
        format!("nginx logged {served} of the {requests} requests")
    })?;
    ensure(connections == opened, || {
        format!("nginx served them on {connections} connections, the client counted {opened}")
    })?;
    Ok(format!(
        "{requests} requests, {CONCURRENT} at a time: {opened} connections by connections_opened() \
         and by nginx's access log ({:.0} requests a connection)",
        requests as f64 / opened as f64
    ))
}

/// The requests of this run in nginx's access log, and the distinct connections that served
/// them.
fn nginx_connections(log: &Path, mark: &str) -> Result<(usize, u64), String> {
    let text = std::fs::read_to_string(log).map_err(|e| format!("{}: {e}", log.display()))?;
    let needle = format!("run={mark}&");
    let mut serials: Vec<&str> = text
        .lines()
        .filter(|line| line.contains(&needle))
        .filter_map(|line| line.split_whitespace().next())
        .collect();
    let served = serials.len();
    serials.sort_unstable();
    serials.dedup();
    Ok((served, serials.len() as u64))
}
