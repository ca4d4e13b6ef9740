//! `TCP_NODELAY` on the store's PostgreSQL connections. sqlx sets none, and its TLS stream
//! writes each TLS record with a write of its own: the second of two writes waits until the
//! server acknowledges the first, and a server with nothing to answer yet (a statement longer
//! than one record, such as an import's batch) delays that acknowledgement (the wait is in
//! docs/benchmark.md). Once a connection is up, it asks the server which port it came from
//! and sets the option on this process's socket with that local port. The connection's own
//! handshake still waits; every statement after it does not.

use std::os::fd::{BorrowedFd, RawFd};

use sqlx::postgres::PgConnection;

/// Sets `TCP_NODELAY` on `conn`'s socket; a connection over a Unix socket, or through
/// something that changes its port (a proxy, NAT), is left as it is. Never fails: the option
/// only saves time.
pub async fn on_connect(conn: &mut PgConnection) -> Result<(), sqlx::Error> {
    let port: Result<Option<i32>, _> = sqlx::query_scalar("SELECT inet_client_port()")
        .fetch_one(&mut *conn)
        .await;
    match port {
        Ok(port) => {
            if let Some(port) = port.and_then(|p| u16::try_from(p).ok()) {
                set_on_local_port(port);
            }
        }
        Err(e) => tracing::debug!(error = %e, "cannot ask PostgreSQL for the connection's port"),
    }
    Ok(())
}

/// Sets `TCP_NODELAY` on this process's TCP sockets bound to local port `port`.
fn set_on_local_port(port: u16) {
    let Ok(entries) = std::fs::read_dir("/proc/self/fd") else {
        return;
    };
    let fds = entries.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<RawFd>().ok());
    for fd in fds {
        // SAFETY: the descriptor is only borrowed for two socket calls. Were it closed and
        // reused meanwhile, the calls would fail or find another port, and change nothing.
        let borrowed = unsafe { BorrowedFd::borrow_raw(fd) };
        let socket = socket2::SockRef::from(&borrowed);
        let local_port = socket
            .local_addr()
            .ok()
            .and_then(|a| a.as_socket())
            .map(|a| a.port());
        if local_port == Some(port)
            && socket.r#type().ok() == Some(socket2::Type::STREAM)
            && let Err(e) = socket.set_tcp_nodelay(true)
        {
            tracing::debug!(error = %e, fd, "cannot set TCP_NODELAY");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sets_nodelay_on_the_socket_of_the_port_only() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let ours = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let other = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        assert!(!ours.nodelay().unwrap() && !other.nodelay().unwrap());
        set_on_local_port(ours.local_addr().unwrap().port());
        assert!(ours.nodelay().unwrap());
        assert!(!other.nodelay().unwrap());
    }
}
