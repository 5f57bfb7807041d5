//! gRPC's `TestService/StreamingOutputCall` and `StreamingInputCall` served by tonic 0.14, the
//! peer of the streaming benchmarks (`bash benches/e2e.sh streaming` and `clientstream`), both
//! answered as `interop_server` answers them: each response parameter of a StreamingOutputCall
//! becomes one reply of that size, all ready at once; a StreamingInputCall's reply is the sum of
//! its messages' payload sizes. The other methods answer `UNIMPLEMENTED`.
//!
//! `cargo run --release --example tonic_streaming_server -- --addr 127.0.0.1:10000 --workers 1`

use protos::tonic_pb::grpc_testing as pb;
use tonic::{Request, Response, Status, Streaming};

use pb::test_service_server::{TestService, TestServiceServer};

#[path = "support/peer.rs"]
mod peer;

type Replies =
    futures_util::stream::Iter<std::vec::IntoIter<Result<pb::StreamingOutputCallResponse, Status>>>;

struct Streamer;

#[tonic::async_trait]
impl TestService for Streamer {
    async fn empty_call(&self, _: Request<pb::Empty>) -> Result<Response<pb::Empty>, Status> {
        Err(Status::unimplemented(
            "only StreamingOutputCall and StreamingInputCall",
        ))
    }

    async fn unary_call(
        &self,
        _: Request<pb::SimpleRequest>,
    ) -> Result<Response<pb::SimpleResponse>, Status> {
        Err(Status::unimplemented(
            "only StreamingOutputCall and StreamingInputCall",
        ))
    }

    type StreamingOutputCallStream = Replies;

    async fn streaming_output_call(
        &self,
        request: Request<pb::StreamingOutputCallRequest>,
    ) -> Result<Response<Replies>, Status> {
        let replies: Vec<_> = request
            .into_inner()
            .response_parameters
            .iter()
            .map(|parameters| {
                Ok(pb::StreamingOutputCallResponse {
                    payload: Some(pb::Payload {
                        r#type: 0,
                        body: vec![0; parameters.size.max(0) as usize],
                    }),
                })
            })
            .collect();
        Ok(Response::new(futures_util::stream::iter(replies)))
    }

    async fn streaming_input_call(
        &self,
        request: Request<Streaming<pb::StreamingInputCallRequest>>,
    ) -> Result<Response<pb::StreamingInputCallResponse>, Status> {
        let mut requests = request.into_inner();
        let mut aggregated_payload_size = 0;
        while let Some(request) = requests.message().await? {
            aggregated_payload_size += request.payload.map_or(0, |p| p.body.len() as i32);
        }
        Ok(Response::new(pb::StreamingInputCallResponse {
            aggregated_payload_size,
        }))
    }

    type FullDuplexCallStream = Replies;

    async fn full_duplex_call(
        &self,
        _: Request<Streaming<pb::StreamingOutputCallRequest>>,
    ) -> Result<Response<Replies>, Status> {
        Err(Status::unimplemented(
            "only StreamingOutputCall and StreamingInputCall",
        ))
    }

    type HalfDuplexCallStream = Replies;

    async fn half_duplex_call(
        &self,
        _: Request<Streaming<pb::StreamingOutputCallRequest>>,
    ) -> Result<Response<Replies>, Status> {
        Err(Status::unimplemented(
            "only StreamingOutputCall and StreamingInputCall",
        ))
    }

    async fn unimplemented_call(
        &self,
        _: Request<pb::Empty>,
    ) -> Result<Response<pb::Empty>, Status> {
        Err(Status::unimplemented("unimplemented_call"))
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (addr, runtime) = peer::runtime_from_args("127.0.0.1:10000")?;
    runtime.block_on(async move {
        println!("tonic streaming server listening on {addr}");
        tonic::transport::Server::builder()
            .add_service(TestServiceServer::new(Streamer))
            .serve_with_shutdown(addr, async {
                let _ = tokio::signal::ctrl_c().await;
            })
            .await
    })?;
    Ok(())
}
