//! `jsontest.JsonTest`: echoes what it is sent, for the Connect clients' JSON and GET cases
//! (`interop/connect/`): its messages have every kind of field ProtoJSON maps, and `Echo` has
//! no side effects, so the Connect protocol may call it with GET.

use fastgrpc::{FastFuture, Request, Response, RpcFuture};
use protos::jsontest::json_test_server::{JsonTest, JsonTestServer};
use protos::jsontest::{Scalars, WellKnown};

pub struct Echo;

impl Echo {
    pub fn server() -> JsonTestServer<Echo> {
        JsonTestServer::new(Echo)
    }
}

impl JsonTest for Echo {
    fn echo(&self, request: Request<Scalars>) -> impl RpcFuture<Scalars> {
        FastFuture::ok(Response::new(request.into_inner()))
    }

    fn echo_well_known(&self, request: Request<WellKnown>) -> impl RpcFuture<WellKnown> {
        FastFuture::ok(Response::new(request.into_inner()))
    }

    fn ping(&self, _: Request<()>) -> impl RpcFuture<()> {
        FastFuture::ok(Response::new(()))
    }
}
