//! Opening a [`Conn`]: the socket, the startup message and
//! authentication (trust, password, MD5 and SCRAM-SHA-256, the methods of
//! `pg_hba.conf` that need no TLS or Kerberos), up to the first
//! `ReadyForQuery`.

use std::time::Duration;

use bytes::BytesMut;
use postgres_protocol::authentication::sasl::{ChannelBinding, SCRAM_SHA_256, ScramSha256};
use postgres_protocol::message::backend::Message;
use postgres_protocol::message::frontend;
use tokio_postgres::Config;
use tokio_postgres::config::{Host, TargetSessionAttrs};

use super::backend::{self, tag};
use super::socket::Socket;
use super::{Conn, Error, encode, protocol};

/// How long one connection attempt may take when the config sets no
/// `connect_timeout`.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// Opens a connection to the first of `config`'s hosts that accepts it
/// (libpq's order), as `config`'s user, to its database, with its
/// `application_name` and `options`.
///
/// Errors: no host accepted the connection (the last host's error), the
/// server refused the login, or it asked for an authentication method
/// isobench does not speak.
pub async fn connect(config: &Config) -> Result<Conn, Error> {
    connect_from(config, 0).await.map(|(conn, _)| conn)
}

/// [`connect`], trying `config`'s hosts from host `first` (an index into
/// `get_hosts()`, taken modulo their number) on, wrapping around: host
/// `first` if it accepts, else the next. Returns the connection and the
/// index of the host that accepted it.
///
/// Errors: [`connect`]'s (the last host tried's error).
pub async fn connect_from(config: &Config, first: usize) -> Result<(Conn, usize), Error> {
    let hosts = config.get_hosts();
    if hosts.is_empty() {
        return Err(Error::Protocol("no host to connect to".into()));
    }
    let timeout = config
        .get_connect_timeout()
        .copied()
        .unwrap_or(DEFAULT_TIMEOUT);
    let mut last = Error::Closed;
    for k in 0..hosts.len() {
        let i = (first + k) % hosts.len();
        let (host, port) = (&hosts[i], port_of(config, i));
        let attempt = async {
            let stream = open(host, port).await?;
            let mut conn = startup(stream, config).await?;
            if config.get_target_session_attrs() == TargetSessionAttrs::ReadWrite {
                writable(&mut conn).await?;
            }
            Ok(conn)
        };
        match tokio::time::timeout(timeout, attempt).await {
            Ok(Ok(conn)) => return Ok((conn, i)),
            Ok(Err(e)) => last = e,
            Err(_) => {
                last = Error::Io(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    format!("no answer within {timeout:?}"),
                ))
            }
        }
    }
    Err(last)
}

/// The port of host `i` of `config`: libpq's rule (none: 5432; one: every
/// host's; else the `i`-th).
fn port_of(config: &Config, i: usize) -> u16 {
    match config.get_ports() {
        [] => 5432,
        [p] => *p,
        ps => ps.get(i).copied().unwrap_or(5432),
    }
}

/// Checks that `conn` takes writes (`target_session_attrs=read-write`,
/// as libpq and tokio-postgres check it: `SHOW transaction_read_only`),
/// so that a client of a DSN naming a primary and its standbys reaches
/// the primary, also after a failover made another host the primary.
///
/// Errors: the session is read-only (a standby, or a server set to
/// `default_transaction_read_only`), or the query failed; the caller
/// drops the connection.
async fn writable(conn: &mut Conn) -> Result<(), Error> {
    let rows = conn.simple_query("SHOW transaction_read_only").await?;
    let read_only = rows
        .iter()
        .any(|m| matches!(m, super::SimpleMessage::Row(r) if r.get(0) == Some("on")));
    if read_only {
        return Err(Error::Protocol(
            "session is read-only (target_session_attrs=read-write: the next host is tried)".into(),
        ));
    }
    Ok(())
}

/// `config`'s hosts as reports name them, in the DSN's order: `name:port`
/// for TCP, `dir:port` for a Unix-domain socket's directory.
pub fn host_labels(config: &Config) -> Vec<String> {
    config
        .get_hosts()
        .iter()
        .enumerate()
        .map(|(i, h)| {
            let name = match h {
                Host::Tcp(name) => name.clone(),
                Host::Unix(dir) => dir.display().to_string(),
            };
            format!("{name}:{}", port_of(config, i))
        })
        .collect()
}

async fn open(host: &Host, port: u16) -> Result<Socket, Error> {
    match host {
        Host::Tcp(name) => {
            let s = tokio::net::TcpStream::connect((name.as_str(), port))
                .await
                .map_err(Error::Io)?;
            Socket::tcp(s).map_err(Error::Io)
        }
        Host::Unix(dir) => {
            let path = dir.join(format!(".s.PGSQL.{port}"));
            let s = tokio::net::UnixStream::connect(path)
                .await
                .map_err(Error::Io)?;
            Socket::unix(s).map_err(Error::Io)
        }
    }
}

/// Sends the startup message and answers the authentication requests
/// until the server is ready for queries.
async fn startup(stream: Socket, config: &Config) -> Result<Conn, Error> {
    let mut conn = Conn {
        stream,
        rbuf: BytesMut::with_capacity(super::READ_BUFFER),
        rpos: 0,
        wbuf: BytesMut::with_capacity(super::WRITE_BUFFER),
        closed: false,
        end: None,
        next_statement: 0,
        pid: 0,
        status: b'I',
        sent: false,
        unnamed: None,
        notices: false,
    };
    let user = config.get_user().unwrap_or("postgres");
    let mut params: Vec<(&str, &str)> = vec![("user", user), ("client_encoding", "UTF8")];
    if let Some(db) = config.get_dbname() {
        params.push(("database", db));
    }
    if let Some(app) = config.get_application_name() {
        params.push(("application_name", app));
    }
    if let Some(options) = config.get_options() {
        params.push(("options", options));
    }
    frontend::startup_message(params.iter().copied(), &mut conn.wbuf).map_err(encode)?;
    conn.flush().await?;
    let password = config.get_password();
    let mut scram: Option<ScramSha256> = None;
    let need_password = || {
        password.ok_or_else(|| {
            Error::Protocol(format!(
                "the server asks user '{user}' for a password and none was given (PGPASSWORD, or the DSN's password)"
            ))
        })
    };
    loop {
        let f = conn.read().await?;
        match f.tag {
            tag::BACKEND_KEY_DATA => conn.pid = backend::backend_pid(&conn.rbuf[f.body()])?,
            tag::ERROR_RESPONSE => return Err(conn.server_error(f)),
            tag::READY_FOR_QUERY => return Ok(conn),
            tag::AUTHENTICATION => {}
            _ => continue,
        }
        match backend::decode(&conn.rbuf[f.whole()])? {
            Message::AuthenticationOk => {}
            Message::AuthenticationCleartextPassword => {
                frontend::password_message(need_password()?, &mut conn.wbuf).map_err(encode)?;
                conn.flush().await?;
            }
            Message::AuthenticationMd5Password(body) => {
                let hash = postgres_protocol::authentication::md5_hash(
                    user.as_bytes(),
                    need_password()?,
                    body.salt(),
                );
                frontend::password_message(hash.as_bytes(), &mut conn.wbuf).map_err(encode)?;
                conn.flush().await?;
            }
            Message::AuthenticationSasl(body) => {
                let mut mechanisms = body.mechanisms();
                let mut scram_offered = false;
                while let Some(m) =
                    fallible_iterator::FallibleIterator::next(&mut mechanisms).map_err(protocol)?
                {
                    scram_offered |= m == SCRAM_SHA_256;
                }
                if !scram_offered {
                    return Err(Error::Protocol(
                        "the server offers no SASL mechanism isobench speaks (SCRAM-SHA-256 without channel binding)".into(),
                    ));
                }
                let s = ScramSha256::new(need_password()?, ChannelBinding::unsupported());
                frontend::sasl_initial_response(SCRAM_SHA_256, s.message(), &mut conn.wbuf)
                    .map_err(encode)?;
                conn.flush().await?;
                scram = Some(s);
            }
            Message::AuthenticationSaslContinue(body) => {
                let s = scram
                    .as_mut()
                    .ok_or_else(|| Error::Protocol("SASL continue before SASL start".into()))?;
                s.update(body.data()).map_err(protocol)?;
                frontend::sasl_response(s.message(), &mut conn.wbuf).map_err(encode)?;
                conn.flush().await?;
            }
            Message::AuthenticationSaslFinal(body) => {
                let s = scram
                    .as_mut()
                    .ok_or_else(|| Error::Protocol("SASL final before SASL start".into()))?;
                s.finish(body.data()).map_err(protocol)?;
            }
            Message::AuthenticationKerberosV5
            | Message::AuthenticationScmCredential
            | Message::AuthenticationGss
            | Message::AuthenticationSspi
            | Message::AuthenticationGssContinue(_) => {
                return Err(Error::Protocol(
                    "the server asks for an authentication method isobench does not speak (Kerberos, GSSAPI or SSPI); use trust, password, md5 or scram-sha-256".into(),
                ));
            }
            _ => {}
        }
    }
}
