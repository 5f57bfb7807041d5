//! Transports and connection information: TCP, unix domain sockets, any stream of connections
//! (in-memory pipes here), and the `ConnectInfo` a handler sees for each.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use fastgrpc::Server;
use fastgrpc::transport::{Address, ConnectInfo};
use support::pb::helloworld::greeter_server::GreeterServer;
use support::{RecordingGreeter, TestServer, channel, channel_with, say_hello, until};
use tokio::net::TcpStream;

#[tokio::test]
async fn connect_info_is_off_by_default() {
    let greeter = RecordingGreeter::default();
    let server =
        TestServer::start(Server::builder().add_service(GreeterServer::new(greeter.clone()))).await;
    let reply = say_hello(channel(&server).await, "off").await.unwrap();
    assert_eq!(reply, "Hello off");
    assert!(matches!(greeter.seen().as_slice(), [None]));
    server.stop().await;
}

#[tokio::test]
async fn tcp_handlers_see_both_addresses() {
    let greeter = RecordingGreeter::default();
    let server = TestServer::start(
        Server::builder()
            .connect_info(true)
            .add_service(GreeterServer::new(greeter.clone())),
    )
    .await;
    // The client's end of each connection it opens.
    let client_ends = Arc::new(Mutex::new(Vec::new()));
    let channel = {
        let (addr, client_ends) = (server.addr, client_ends.clone());
        channel_with(move || {
            let client_ends = client_ends.clone();
            async move {
                let tcp = TcpStream::connect(addr).await?;
                client_ends.lock().unwrap().push(tcp.local_addr()?);
                Ok(tcp)
            }
        })
        .await
    };
    for name in ["one", "two"] {
        let reply = say_hello(channel.clone(), name).await.unwrap();
        assert_eq!(reply, format!("Hello {name}"));
    }

    let client_ends = client_ends.lock().unwrap().clone();
    assert_eq!(client_ends.len(), 1, "both calls on one connection");
    let seen = greeter.seen();
    assert_eq!(seen.len(), 2);
    for info in seen {
        let info = info.expect("connect_info(true) puts it in every request");
        assert_eq!(info.remote_addr(), Some(client_ends[0]));
        assert_eq!(info.local_addr(), Some(server.addr));
        assert!(matches!(info.remote(), Some(Address::Inet(addr)) if *addr == client_ends[0]));
    }
    // tonic's own accessor works with the `tonic-remote-addr` feature.
    let expected = cfg!(feature = "tonic-remote-addr").then_some(client_ends[0]);
    assert_eq!(*greeter.tonic_remote.lock().unwrap(), [expected, expected]);
    server.stop().await;
}

/// A fresh directory under the system's temporary directory, removed on drop.
struct TempDir(std::path::PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        let path = std::env::temp_dir().join(format!("fastgrpc-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).unwrap();
        TempDir(path)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[cfg(unix)]
#[tokio::test]
async fn unix_socket_serves_and_tells_its_path() {
    let dir = TempDir::new("uds");
    let path = dir.0.join("greeter.sock");
    let greeter = RecordingGreeter::default();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(
        Server::builder()
            .connect_info(true)
            .add_service(GreeterServer::new(greeter.clone()))
            .serve_with_uds(path.clone(), async {
                let _ = stopped.await;
            }),
    );
    until("the server binds its socket", || path.exists()).await;

    let channel = {
        let path = path.clone();
        channel_with(move || tokio::net::UnixStream::connect(path.clone())).await
    };
    assert_eq!(say_hello(channel, "uds").await.unwrap(), "Hello uds");

    let seen = greeter.seen();
    let [Some(info)] = seen.as_slice() else {
        panic!("one call with connection information: {seen:?}");
    };
    assert_eq!(
        info.local().and_then(Address::as_unix_path),
        Some(path.as_path())
    );
    assert!(matches!(info.remote(), Some(Address::Unix(_))));
    assert_eq!(info.remote_addr(), None, "no IP address over a unix socket");
    assert_eq!(info.local_addr(), None);

    stop.send(()).unwrap();
    tokio::time::timeout(Duration::from_secs(10), server)
        .await
        .expect("the server stops")
        .unwrap()
        .unwrap();
    assert!(!path.exists(), "the socket file is removed");
}

#[tokio::test]
async fn any_stream_of_connections_is_served_until_it_ends() {
    let greeter = RecordingGreeter::default();
    let (connections, mut accepted) =
        tokio::sync::mpsc::channel::<std::io::Result<tokio::io::DuplexStream>>(4);
    // A failed connection first: skipped, the next one is served.
    connections
        .send(Err(std::io::Error::other("refused")))
        .await
        .unwrap();
    let incoming = futures_util::stream::poll_fn(move |cx| accepted.poll_recv(cx));
    let server = tokio::spawn(
        Server::builder()
            .connect_info(true)
            .add_service(GreeterServer::new(greeter.clone()))
            .serve_with_incoming(incoming, std::future::pending()),
    );

    let channel = {
        let connections = connections.clone();
        channel_with(move || {
            let connections = connections.clone();
            async move {
                let (client, server) = tokio::io::duplex(64 * 1024);
                connections
                    .send(Ok(server))
                    .await
                    .map_err(std::io::Error::other)?;
                Ok(client)
            }
        })
        .await
    };
    assert_eq!(
        say_hello(channel.clone(), "pipe").await.unwrap(),
        "Hello pipe"
    );
    let seen = greeter.seen();
    let [Some(info)] = seen.as_slice() else {
        panic!("one call with connection information: {seen:?}");
    };
    assert!(info.local().is_none() && info.remote().is_none());

    // The stream ends once every sender is gone (the client's connector holds one): the
    // server then drains and returns.
    drop(channel);
    drop(connections);
    tokio::time::timeout(Duration::from_secs(10), server)
        .await
        .expect("the server returns once its stream of connections has ended")
        .unwrap()
        .unwrap();
}

#[test]
fn connect_info_reports_what_it_was_given() {
    let local: std::net::SocketAddr = "127.0.0.1:50051".parse().unwrap();
    let info = ConnectInfo::new(Some(Address::Inet(local)), None);
    assert_eq!(info.local_addr(), Some(local));
    assert_eq!(info.remote_addr(), None);
    assert_eq!(
        format!("{info:?}"),
        if cfg!(feature = "tls") {
            "ConnectInfo { local: Some(127.0.0.1:50051), remote: None, peer_certs: None }"
        } else {
            "ConnectInfo { local: Some(127.0.0.1:50051), remote: None }"
        }
    );
}

/// `serve_with_incoming` over a stream that yields `errors` (as `errno`s), then ends.
async fn serve_errors(errors: &[i32]) -> std::io::Result<()> {
    let items: Vec<std::io::Result<tokio::io::DuplexStream>> = errors
        .iter()
        .map(|&errno| Err(std::io::Error::from_raw_os_error(errno)))
        .collect();
    let serving = Server::builder()
        .add_service(GreeterServer::new(RecordingGreeter::default()))
        .serve_with_incoming(futures_util::stream::iter(items), std::future::pending());
    tokio::time::timeout(Duration::from_secs(5), serving)
        .await
        .expect("serving ends within 5 s")
}

#[cfg(unix)]
#[tokio::test]
async fn serving_stops_with_the_error_of_a_broken_listener_and_not_of_a_failed_connection() {
    // A reset connection and a shortage of file descriptors are passed over; the stream ends.
    serve_errors(&[libc::ECONNRESET, libc::EMFILE])
        .await
        .expect("nothing broke");
    // A listener that is no socket any more stops serving, with its error.
    let error = serve_errors(&[
        libc::ECONNRESET,
        libc::EMFILE,
        libc::EBADF,
        libc::ECONNRESET,
    ])
    .await
    .expect_err("the listener broke");
    assert_eq!(error.raw_os_error(), Some(libc::EBADF));
}
