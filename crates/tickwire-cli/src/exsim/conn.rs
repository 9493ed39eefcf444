//! One simulator connection: the exchange's rules for it, on its own thread.

use std::collections::VecDeque;
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tickwire::blocking::{CloseCode, Message, Recv, TlsStream, Transport, WebSocket};

use super::style::{Opening, Request};
use super::{CloseHow, Nanos, Sent, Sim};

/// How long a receive waits before the connection's timers and queue are looked at: the
/// most a published message waits before it is written.
const TICK: Duration = Duration::from_millis(2);
/// How many sent messages a connection keeps for `/replay`.
const HISTORY: usize = 4096;

/// What the control interface asks of a connection.
pub(crate) enum Command {
    Close {
        how: CloseHow,
        code: u16,
    },
    Stall(bool),
    /// Leave out the next `count` messages of `key` on this connection.
    Gap {
        key: usize,
        count: u64,
    },
    /// Send the last `count` messages again.
    Replay(usize),
}

/// A connection as the other threads see it.
pub(crate) struct Conn {
    pub(crate) id: u64,
    pub(crate) peer: Option<SocketAddr>,
    pub(crate) opened: Nanos,
    shared: Mutex<Shared>,
}

/// What the connection's thread, the generator and the control thread share.
#[derive(Default)]
pub(crate) struct Shared {
    /// Published (key, number) pairs not yet written.
    queue: VecDeque<(usize, u64)>,
    commands: VecDeque<Command>,
    pub(crate) subscribed: Vec<bool>,
    pub(crate) logged_in: bool,
    pub(crate) stalled: bool,
    /// Every message received from the client: data messages ...
    pub(crate) received: Vec<Nanos>,
    /// ... and pings and pongs.
    pub(crate) received_control: u64,
    pub(crate) sent: u64,
    pub(crate) app_pings_answered: u64,
    pub(crate) server_pings_sent: u64,
    pub(crate) server_pongs: u64,
    /// Why it ended, once it has: `ws 1000`, `fin`, `rst` (the simulator's), or the peer's.
    pub(crate) ended: Option<String>,
}

impl Conn {
    pub(crate) fn lock(&self) -> MutexGuard<'_, Shared> {
        self.shared.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The generator's: queue a published number when this connection subscribed to its key.
    pub(crate) fn offer(&self, key: usize, seq: u64) {
        let mut shared = self.lock();
        if shared.ended.is_none() && shared.subscribed[key] {
            shared.queue.push_back((key, seq));
        }
    }

    /// The next command the control interface queued.
    pub(crate) fn take_command(&self) -> Option<Command> {
        self.lock().commands.pop_front()
    }

    pub(crate) fn command(&self, command: Command) -> bool {
        let mut shared = self.lock();
        if shared.ended.is_some() {
            return false;
        }
        shared.commands.push_back(command);
        true
    }
}

/// The TCP socket under a connection, for FIN and RST.
pub(crate) trait Tcp: Transport {
    fn tcp(&self) -> &TcpStream;
}

impl Tcp for TcpStream {
    fn tcp(&self) -> &TcpStream {
        self
    }
}

impl Tcp for TlsStream<TcpStream> {
    fn tcp(&self) -> &TcpStream {
        self.get_ref()
    }
}

/// Adds a connection to the simulator's list (the control interface's `conn` numbers),
/// subscribed to `keys`.
pub(crate) fn register(sim: &Sim, peer: Option<SocketAddr>, keys: &[usize]) -> Arc<Conn> {
    let mut state = sim.lock();
    let mut subscribed = vec![false; sim.args.keys.len()];
    for &key in keys {
        subscribed[key] = true;
    }
    let conn = Arc::new(Conn {
        id: state.conns.len() as u64,
        peer,
        opened: sim.now(),
        shared: Mutex::new(Shared {
            subscribed,
            ..Shared::default()
        }),
    });
    state.conns.push(Arc::clone(&conn));
    conn
}

/// Marks a connection ended, `ending` saying how.
pub(crate) fn finish(conn: &Conn, ending: String) {
    let mut shared = conn.lock();
    shared.ended = Some(ending);
    shared.queue.clear();
}

/// Registers the connection and serves it until it ends; `opening` is what its opening
/// request subscribed to.
pub(crate) fn run<S: Tcp>(
    sim: &Arc<Sim>,
    mut ws: WebSocket<S>,
    peer: Option<SocketAddr>,
    opening: Opening,
) {
    let conn = register(sim, peer, &opening.keys);
    ws.set_read_timeout(Some(TICK));
    let mut session = Session::new(sim, &conn, opening);
    let ended = session.serve(&mut ws);
    let ending = match ended {
        End::Close(how, code) => close(&mut ws, how, code),
        End::Peer(why) => why,
    };
    finish(&conn, ending);
}

/// How a connection ended: the simulator closes it, or the peer did.
enum End {
    Close(CloseHow, u16),
    Peer(String),
}

/// Ends the connection as `how` says; returns how it ended (`ws 1000`, `fin`, `rst`).
pub(crate) fn close<S: Tcp>(ws: &mut WebSocket<S>, how: CloseHow, code: u16) -> String {
    match how {
        CloseHow::Ws => {
            let _ = ws.close(CloseCode::from(code), "");
            let _ = ws.finish();
            format!("ws {code}")
        }
        CloseHow::Fin => {
            let _ = ws.flush();
            let _ = ws.stream().tcp().shutdown(Shutdown::Both);
            "fin".to_owned()
        }
        CloseHow::Rst => {
            // SO_LINGER 0: close(2) sends RST and drops what is unsent.
            let _ = socket2::SockRef::from(ws.stream().tcp()).set_linger(Some(Duration::ZERO));
            "rst".to_owned()
        }
    }
}

/// One connection's rules and timers.
struct Session<'a> {
    sim: &'a Sim,
    conn: &'a Conn,
    opened: Instant,
    /// Since when the connection counts as idle for `--idle-close`: the client's last
    /// message (and, in a style whose exchange counts them, the last message pushed).
    idle_since: Instant,
    next_server_ping: Option<Instant>,
    pong_due: Option<Instant>,
    /// Messages to leave out, per key (`/gap` with `conn`).
    gaps: Vec<u64>,
    history: VecDeque<(usize, u64)>,
    /// Whether the client has subscribed at all (the subscription deadline then no longer
    /// applies, also after it unsubscribed).
    subscribed_once: bool,
    opening: Opening,
}

impl<'a> Session<'a> {
    fn new(sim: &'a Sim, conn: &'a Conn, opening: Opening) -> Self {
        let now = Instant::now();
        Self {
            sim,
            conn,
            opened: now,
            idle_since: now,
            next_server_ping: sim.args.server_ping_every.map(|every| now + every),
            pong_due: None,
            gaps: vec![0; sim.args.keys.len()],
            history: VecDeque::new(),
            subscribed_once: !opening.keys.is_empty(),
            opening,
        }
    }

    fn serve<S: Tcp>(&mut self, ws: &mut WebSocket<S>) -> End {
        loop {
            let text = match ws.recv() {
                Ok(Recv::Message(Message::Text(text))) => Some(text.to_owned()),
                Ok(Recv::Message(Message::Binary(_))) => None,
                Ok(Recv::Message(Message::Ping(_) | Message::Pong(_))) => {
                    self.conn.lock().received_control += 1;
                    continue;
                }
                Ok(Recv::Closed(frame)) => {
                    let code = frame.map_or(1005, |f| u16::from(f.code));
                    let _ = ws.finish();
                    return End::Peer(format!("peer ws {code}"));
                }
                // A read timeout (the tick), or what the non-exhaustive Recv adds.
                Ok(_) => None,
                Err(e) => return End::Peer(format!("peer error: {e}")),
            };
            if let Some(text) = text {
                self.idle_since = Instant::now();
                self.conn.lock().received.push(self.sim.now());
                if let Err(end) = self.on_text(ws, &text) {
                    return end;
                }
                // Read on before writing: the client's burst is counted as it came.
                continue;
            }
            if let Err(end) = self.on_tick(ws) {
                return end;
            }
        }
    }

    /// A text from the client: login, subscribe, unsubscribe, the application ping, or the
    /// answer to the server's.
    fn on_text<S: Tcp>(&mut self, ws: &mut WebSocket<S>, text: &str) -> Result<(), End> {
        let args = &self.sim.args;
        if text == args.app_ping {
            self.conn.lock().app_pings_answered += 1;
            return self.send(ws, &args.app_pong);
        }
        if text == args.app_pong {
            let mut shared = self.conn.lock();
            shared.server_pongs += 1;
            self.pong_due = None;
            return Ok(());
        }
        let request: serde_json::Value = serde_json::from_str(text).unwrap_or_default();
        // A login is the simulator's own shape in every style.
        let op = request["op"].as_str().unwrap_or_default();
        let logged_in = self.conn.lock().logged_in;
        if let Some(token) = &args.login_token
            && !logged_in
        {
            let ok = op == "login" && request["token"].as_str() == Some(token);
            let reply = serde_json::json!({"event": "login", "conn": self.conn.id, "ok": ok});
            self.send(ws, &reply.to_string())?;
            if !ok {
                return Err(End::Close(CloseHow::Ws, 1008));
            }
            self.conn.lock().logged_in = true;
            return Ok(());
        }
        let style = args.style;
        match style.request(&request) {
            Request::Subscribe { on, topics, id } => self.subscribe(ws, &topics, on, &id),
            Request::List { id } => {
                let now = self.subscribed_keys();
                self.send(ws, &style.list(&now, &id))
            }
            Request::Unknown => {
                let problem = format!("unknown request {text:?}");
                let reply = style.error(self.conn.id, &problem, true, &request["id"]);
                self.send(ws, &reply)
            }
        }
    }

    /// The keys the connection is subscribed to, in the order of `--keys`.
    fn subscribed_keys(&self) -> Vec<&'a str> {
        let keys = &self.sim.args.keys;
        let shared = self.conn.lock();
        keys.iter()
            .zip(&shared.subscribed)
            .filter(|(_, on)| **on)
            .map(|(key, _)| key.as_str())
            .collect()
    }

    /// Subscribes to (`on`) or unsubscribes from the keys the topics name, and answers.
    fn subscribe<S: Tcp>(
        &mut self,
        ws: &mut WebSocket<S>,
        topics: &[String],
        on: bool,
        id: &serde_json::Value,
    ) -> Result<(), End> {
        let (keys, style) = (&self.sim.args.keys, self.sim.args.style);
        let named: Vec<Option<usize>> = topics
            .iter()
            .map(|topic| style.key_index(keys, topic))
            .collect();
        let unknown: Vec<&str> = topics
            .iter()
            .zip(&named)
            .filter(|(_, key)| key.is_none())
            .map(|(topic, _)| topic.as_str())
            .collect();
        if topics.is_empty() || !unknown.is_empty() {
            let problem = format!("unknown keys {unknown:?} (or none named)");
            return self.send(ws, &style.error(self.conn.id, &problem, false, id));
        }
        self.subscribed_once |= on;
        let named: Vec<&str> = named
            .into_iter()
            .flatten()
            .map(|key| keys[key].as_str())
            .collect();
        {
            let mut shared = self.conn.lock();
            for &name in &named {
                if let Some(key) = self.sim.key_index(name) {
                    shared.subscribed[key] = on;
                }
            }
        }
        if self.sim.args.no_ack {
            return Ok(());
        }
        let now = self.subscribed_keys();
        for ack in style.acks(self.conn.id, on, &named, &now, id) {
            self.send(ws, &ack)?;
        }
        Ok(())
    }

    /// Between reads: commands, timers, then the queued messages.
    fn on_tick<S: Tcp>(&mut self, ws: &mut WebSocket<S>) -> Result<(), End> {
        let args = &self.sim.args;
        let now = Instant::now();
        let (commands, queue, stalled) = {
            let mut shared = self.conn.lock();
            let commands: Vec<Command> = shared.commands.drain(..).collect();
            let queue: Vec<(usize, u64)> = shared.queue.drain(..).collect();
            (commands, queue, shared.stalled)
        };
        // What was queued while stalled is dropped, also by the tick that resumes.
        let was_stalled = stalled;
        let mut stalled = stalled;
        for command in commands {
            match command {
                Command::Close { how, code } => return Err(End::Close(how, code)),
                Command::Stall(on) => stalled = on,
                Command::Gap { key, count } => self.gaps[key] += count,
                Command::Replay(count) => {
                    let again: Vec<(usize, u64)> = self
                        .history
                        .iter()
                        .skip(self.history.len().saturating_sub(count))
                        .copied()
                        .collect();
                    self.write(ws, &again, true)?;
                }
            }
        }
        self.conn.lock().stalled = stalled;
        if !self.subscribed_once && now >= self.opened + args.subscribe_deadline {
            return Err(End::Close(CloseHow::Ws, 1008));
        }
        if let Some(max_age) = args.max_age
            && now >= self.opened + max_age
        {
            return Err(End::Close(args.age_close, 1000));
        }
        if let Some(idle) = args.idle_close
            && now >= self.idle_since + idle
        {
            return Err(End::Close(CloseHow::Ws, 4000));
        }
        if let Some(due) = self.pong_due
            && now >= due
        {
            return Err(End::Close(CloseHow::Ws, 4001));
        }
        if let (Some(at), Some(every)) = (self.next_server_ping, args.server_ping_every)
            && now >= at
        {
            self.next_server_ping = Some(now + every);
            if self.pong_due.is_none() {
                self.pong_due = Some(now + args.server_ping_deadline);
            }
            self.conn.lock().server_pings_sent += 1;
            self.send(ws, &args.app_ping)?;
        }
        // A stalled subscription goes quiet: what is published meanwhile is never sent on it.
        if !stalled && !was_stalled {
            let queue: Vec<(usize, u64)> = queue
                .into_iter()
                .filter(|&(key, _)| {
                    let leave_out = self.gaps[key] > 0;
                    self.gaps[key] = self.gaps[key].saturating_sub(1);
                    !leave_out
                })
                .collect();
            self.write(ws, &queue, false)?;
        }
        ws.flush()
            .map_err(|e| End::Peer(format!("peer error: {e}")))
    }

    /// Writes data messages and records them.
    fn write<S: Tcp>(
        &mut self,
        ws: &mut WebSocket<S>,
        messages: &[(usize, u64)],
        replay: bool,
    ) -> Result<(), End> {
        if messages.is_empty() {
            return Ok(());
        }
        let args = &self.sim.args;
        let mut written = Vec::with_capacity(messages.len());
        let mut failed = Ok(());
        for &(key, seq) in messages {
            let text = args
                .style
                .data(&args.keys[key], seq, args.size, &self.opening);
            if let Err(e) = ws.send_text(&text) {
                failed = Err(End::Peer(format!("peer error: {e}")));
                break;
            }
            written.push(Sent {
                conn: self.conn.id,
                key,
                seq,
                replay,
            });
            if !replay {
                if self.history.len() == HISTORY {
                    self.history.pop_front();
                }
                self.history.push_back((key, seq));
            }
        }
        if args.style.idle_counts_pushes() && !written.is_empty() {
            self.idle_since = Instant::now();
        }
        self.conn.lock().sent += written.len() as u64;
        self.sim.record_sent(written);
        failed
    }

    fn send<S: Tcp>(&self, ws: &mut WebSocket<S>, text: &str) -> Result<(), End> {
        ws.send_text(text)
            .and_then(|()| ws.flush())
            .map_err(|e| End::Peer(format!("peer error: {e}")))
    }
}
