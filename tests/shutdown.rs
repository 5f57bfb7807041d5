//! Graceful shutdown under load: hundreds of unary and streaming calls in flight when the
//! signal comes; every accepted call completes, and the server stops within its grace.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use fastgrpc::{Request, Response, Server, Status};
use futures_util::StreamExt;
use support::pb::grpc_testing::test_service_server::{TestService, TestServiceServer};
use support::pb::grpc_testing::{
    Payload, SimpleRequest, SimpleResponse, StreamingOutputCallRequest, StreamingOutputCallResponse,
};
use support::tonic_pb::grpc_testing as client_pb;
use support::tonic_pb::grpc_testing::test_service_client::TestServiceClient;
use support::{TestServer, channel, until};

#[derive(Default)]
struct Counters {
    started: AtomicUsize,
    finished: AtomicUsize,
}

/// Unary calls sleep `response_size` ms; streams send five replies 40 ms apart.
struct Slow(Arc<Counters>);

impl TestService for Slow {
    support::boxed_reply_streams!();

    async fn unary_call(
        &self,
        request: Request<SimpleRequest>,
    ) -> Result<Response<SimpleResponse>, Status> {
        self.0.started.fetch_add(1, Ordering::SeqCst);
        let millis = request.get_ref().response_size as u64;
        tokio::time::sleep(Duration::from_millis(millis)).await;
        self.0.finished.fetch_add(1, Ordering::SeqCst);
        Ok(Response::new(SimpleResponse::default()))
    }

    async fn streaming_output_call(
        &self,
        _request: Request<StreamingOutputCallRequest>,
    ) -> Result<Response<Self::StreamingOutputCallStream>, Status> {
        self.0.started.fetch_add(1, Ordering::SeqCst);
        let counters = self.0.clone();
        let replies = futures_util::stream::unfold(0, move |sent| {
            let counters = counters.clone();
            async move {
                if sent == 5 {
                    counters.finished.fetch_add(1, Ordering::SeqCst);
                    return None;
                }
                tokio::time::sleep(Duration::from_millis(40)).await;
                let reply = StreamingOutputCallResponse {
                    payload: Some(Payload {
                        r#type: 0,
                        body: vec![sent as u8; 8].into(),
                    }),
                };
                Some((Ok(reply), sent + 1))
            }
        });
        Ok(Response::new(replies.boxed()))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_call_in_flight_completes_during_shutdown() {
    const UNARY: usize = 300;
    const STREAMS: usize = 60;
    let counters = Arc::new(Counters::default());
    let mut server = TestServer::start(
        Server::builder()
            .drain_grace(Duration::from_secs(10))
            .add_service(TestServiceServer::new(Slow(counters.clone()))),
    )
    .await;
    let mut channels = Vec::new();
    for _ in 0..4 {
        channels.push(channel(&server).await);
    }

    let mut unary = Vec::new();
    for i in 0..UNARY {
        let mut client = TestServiceClient::new(channels[i % 4].clone());
        unary.push(tokio::spawn(async move {
            let request = client_pb::SimpleRequest {
                response_size: 200 + (i % 5) as i32 * 50,
                ..Default::default()
            };
            client.unary_call(request).await.map(|_| ())
        }));
    }
    let mut streams = Vec::new();
    for i in 0..STREAMS {
        let mut client = TestServiceClient::new(channels[i % 4].clone());
        streams.push(tokio::spawn(async move {
            let mut replies = client
                .streaming_output_call(client_pb::StreamingOutputCallRequest::default())
                .await?
                .into_inner();
            let mut received = 0;
            while replies.message().await?.is_some() {
                received += 1;
            }
            Ok::<_, Status>(received)
        }));
    }

    // Shut down once every call has reached its handler.
    until("every call reaches its handler", || {
        counters.started.load(Ordering::SeqCst) == UNARY + STREAMS
    })
    .await;
    let stopping = Instant::now();
    let addr = server.addr;
    server.begin_stop();

    for call in unary {
        call.await
            .unwrap()
            .expect("a unary call in flight completes");
    }
    for call in streams {
        assert_eq!(
            call.await.unwrap().expect("a stream in flight completes"),
            5
        );
    }
    server.stop().await;
    assert!(
        stopping.elapsed() < Duration::from_secs(5),
        "{:?}",
        stopping.elapsed()
    );
    assert_eq!(
        counters.finished.load(Ordering::SeqCst),
        UNARY + STREAMS,
        "nothing lost"
    );
    assert!(
        tokio::net::TcpStream::connect(addr).await.is_err(),
        "no new connections after shutdown"
    );
}
