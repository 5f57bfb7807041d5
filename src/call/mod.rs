//! A call's context: what the call is, when it must end, and what passes between the
//! connection, the router and the handler while it starts.
//!
//! A transport makes one where it reads a request's head ([`Call::read`]): the request's
//! protocol and message format ([`Wire`], parsed once from its `content-type`, or from a Connect
//! GET's query), and its deadline, from the header its protocol uses (`grpc-timeout`,
//! `connect-timeout-ms`) and the server's own timeout. The dispatcher, the router and a
//! generated server's handlers take it by reference, so none of them reads the request again
//! to learn these.
//!
//! While the call starts (one synchronous call from the transport down to the handler), two
//! more things pass through it:
//! - the clock: the connection's reading when it started the call, which adaptive inline times
//!   the handler's first poll from, and the reading after that poll, which the connection takes
//!   as the call's end (one clock read a call serves the inline budget and the estimate);
//! - the answer's form: the router may ask a unary handler to answer a Connect call in
//!   Connect's own form (sparing the translation of a gRPC-form answer) when nothing between
//!   them reads the gRPC form, and learns afterwards whether it did.
//!
//! Where a call runs without a transport (a service called directly, a tower layer's worker),
//! [`Call::of_request`] reads the request instead, with no clock reading and no question.
//!
//! How a deadline ends a call is in `deadline`: the answer or the reply stream, in the call's
//! protocol ([`Wire::failure`], [`Wire::ending`]).

mod deadline;

pub(crate) use self::deadline::{DeadlineBody, within_deadline};

use std::time::{Duration, Instant};

use http::header::HeaderName;
use tonic::Status;

use crate::body::{RequestBody, ResponseBody};
use crate::codec::Decoding;
use crate::codec::json::DecodeOptions;
use crate::deadline::{Deadline, GRPC_TIMEOUT, parse_grpc_timeout};
use crate::protocol::connect::{TIMEOUT_MS, parse_timeout_ms};
use crate::protocol::{Ending, Format, Protocol, Wire};

/// What a call is and when it must end, made once from its request's head; see the module
/// docs. Generated code passes it from its server's `FastService` to the handlers and never
/// looks inside.
#[doc(hidden)]
#[derive(Debug, Clone, Copy)]
pub struct Call {
    /// `None` when the `content-type` names nothing the server speaks.
    wire: Option<Wire>,
    deadline: Option<Deadline>,
    /// When the connection started serving the call, if it timed it.
    started: Option<Instant>,
    /// When the handler's first poll ended, if the handler timed it from `started`.
    polled: Option<Instant>,
    form: Form,
    /// How the server reads JSON messages (its dispatcher sets it).
    json: DecodeOptions,
}

/// Whether a unary handler answers in gRPC's form or in the call's own protocol's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Form {
    /// gRPC's: what every layer and observer between the router and the handler reads.
    Grpc,
    /// The router asks for Connect's unary form; no handler has taken the question yet.
    Asked,
    /// A unary handler took the question: every outcome of the call is in Connect's form.
    Taken,
}

/// A call known nothing of: gRPC, no deadline, untimed.
impl Default for Call {
    fn default() -> Call {
        Call::new(None)
    }
}

const CONNECT_TIMEOUT: HeaderName = HeaderName::from_static(TIMEOUT_MS);

impl Call {
    /// The call a request's `head` starts: its wire, and its deadline (the client's, or
    /// `default_timeout` if that is shorter; without either, a [`Deadline`] already in the
    /// head's extensions), which also goes into the head's extensions for handlers to read. A malformed timeout is refused with the answer to send, in the call's
    /// protocol: `INTERNAL` for `grpc-timeout` (as grpc-go), `INVALID_ARGUMENT` for Connect's.
    pub(crate) fn read(
        head: &mut http::request::Parts,
        default_timeout: Option<Duration>,
    ) -> Result<Call, Box<http::Response<ResponseBody>>> {
        let mut call = Call::new(Wire::of_head(&head.method, &head.uri, &head.headers));
        match call.timeout(&head.headers, default_timeout) {
            // A deadline set by whoever made the request in-process, if any.
            Ok(None) => call.deadline = head.extensions.get::<Deadline>().copied(),
            Ok(Some(timeout)) => {
                let deadline = Deadline::after(timeout);
                head.extensions.insert(deadline);
                call.deadline = Some(deadline);
            }
            Err(status) => return Err(Box::new(call.failure(&status))),
        }
        Ok(call)
    }

    /// The call of a request served without a transport: its wire from its head, its deadline
    /// the [`Deadline`] in its extensions, if any.
    pub fn of_request(request: &http::Request<RequestBody>) -> Call {
        let mut call = Call::new(Wire::of_head(
            request.method(),
            request.uri(),
            request.headers(),
        ));
        call.deadline = request.extensions().get::<Deadline>().copied();
        call
    }

    fn new(wire: Option<Wire>) -> Call {
        Call {
            wire,
            deadline: None,
            started: None,
            polled: None,
            form: Form::Grpc,
            json: DecodeOptions::default(),
        }
    }

    /// How long the client gives the call, in the header of its protocol, bounded by
    /// `server_default`.
    fn timeout(
        &self,
        headers: &http::HeaderMap,
        server_default: Option<Duration>,
    ) -> Result<Option<Duration>, Status> {
        let client = if self.wire.is_some_and(Wire::is_connect) {
            crate::metadata::header(headers, &CONNECT_TIMEOUT)
                .map(parse_timeout_ms)
                .transpose()?
        } else {
            crate::metadata::header(headers, &GRPC_TIMEOUT)
                .map(parse_grpc_timeout)
                .transpose()?
        };
        Ok(match (client, server_default) {
            (Some(client), Some(server)) => Some(client.min(server)),
            (client, server) => client.or(server),
        })
    }

    /// What the request speaks; `None` if its `content-type` names nothing the server does.
    pub(crate) fn wire(&self) -> Option<Wire> {
        self.wire
    }

    /// What the request speaks, gRPC with protobuf if it named nothing the server speaks.
    pub(crate) fn wire_or_grpc(&self) -> Wire {
        self.wire.unwrap_or_default()
    }

    pub(crate) fn deadline(&self) -> Option<Deadline> {
        self.deadline
    }

    /// How the call's request messages are read: its format, how the server reads JSON, and
    /// the code of a malformed message in its protocol.
    pub(crate) fn decoding(&self) -> Decoding {
        let wire = self.wire_or_grpc();
        Decoding {
            format: wire.request_format(),
            json: self.json,
            malformed_is_invalid_argument: wire.is_connect() || wire.is_rest(),
        }
    }

    /// The call is a REST call (the router found no hosted service by its path, and its
    /// content type is none of gRPC's): its answers are REST's, whoever writes them, its
    /// reply stream Server-Sent Events if `events`.
    pub(crate) fn become_rest(&mut self, events: bool) {
        self.wire = Some(Wire::rest(events));
        self.form = Form::Grpc;
    }

    /// The REST call's request message is bound in protobuf, not JSON (its answer stays
    /// JSON).
    pub(crate) fn bound_in_proto(&mut self) {
        if let Some(Wire {
            protocol: Protocol::Rest { request, .. },
            ..
        }) = &mut self.wire
        {
            *request = Format::Proto;
        }
    }

    /// Whether the call is a REST call.
    pub(crate) fn is_rest(&self) -> bool {
        self.wire.is_some_and(Wire::is_rest)
    }

    /// The server reads JSON messages as `json` says.
    pub(crate) fn set_json(&mut self, json: DecodeOptions) {
        self.json = json;
    }

    /// Whether the call's deadline has passed.
    pub(crate) fn expired(&self) -> bool {
        self.deadline.is_some_and(Deadline::is_expired)
    }

    /// The answer to the call failing with `status` before its reply began, in its protocol.
    pub(crate) fn failure(&self, status: &Status) -> http::Response<ResponseBody> {
        self.wire_or_grpc().failure(status)
    }

    /// How the call's reply stream ends with `status`, in its protocol.
    pub(crate) fn ending(&self, status: &Status) -> Ending {
        self.wire_or_grpc().ending(status)
    }

    /// The connection starts serving the call at `now` (a reading it took already).
    pub(crate) fn start_clock(&mut self, now: Instant) {
        self.started = Some(now);
        self.polled = None;
    }

    /// When the call started, as far as the connection knows, or now.
    pub(crate) fn started(&self) -> Instant {
        self.started.unwrap_or_else(Instant::now)
    }

    /// After the handler's first poll: now, also kept for the connection if it timed the call.
    pub(crate) fn first_poll_ended(&mut self) -> Instant {
        let now = Instant::now();
        if self.started.is_some() {
            self.polled = Some(now);
        }
        now
    }

    /// The reading the handler took after its first poll, if it took one.
    pub(crate) fn polled(&self) -> Option<Instant> {
        self.polled
    }

    /// When the call ended, for the connection that served it: the handler's reading after its
    /// first poll, or the clock if the call had no such poll (a refusal, a hosted service).
    pub(crate) fn ended(&self) -> Instant {
        self.polled.unwrap_or_else(Instant::now)
    }

    /// The router asks the unary handler that starts next to answer a Connect unary call in
    /// Connect's form, or a REST call in REST's; nothing between them must read the gRPC form.
    pub(crate) fn ask_own_form(&mut self) {
        if self.wire.is_some_and(|wire| {
            matches!(
                wire.protocol,
                Protocol::ConnectUnary | Protocol::Rest { .. }
            )
        }) {
            self.form = Form::Asked;
        }
    }

    /// For a unary handler starting: the wire of a Connect unary or REST call it is to answer
    /// in that protocol's form, if its router asked (this handler now has the question, and
    /// answers every outcome so); `None` for gRPC's form.
    pub(crate) fn take_own_form(&mut self) -> Option<Wire> {
        if self.form != Form::Asked {
            return None;
        }
        self.form = Form::Taken;
        self.wire
    }

    /// The router withdraws its question (an observer reads the gRPC form).
    pub(crate) fn decline_own_form(&mut self) {
        if self.form == Form::Asked {
            self.form = Form::Grpc;
        }
    }

    /// Whether a handler answered in the call's own form, as the router asked.
    pub(crate) fn answered_in_own_form(&self) -> bool {
        self.form == Form::Taken
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(content_type: &str, headers: &[(&str, &str)]) -> http::request::Parts {
        let mut request = http::Request::post("/pkg.Svc/M").header("content-type", content_type);
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        request.body(()).unwrap().into_parts().0
    }

    #[tokio::test]
    async fn each_protocol_s_timeout_header_sets_the_deadline() {
        let mut grpc = head("application/grpc", &[("grpc-timeout", "5S")]);
        let call = Call::read(&mut grpc, None).unwrap();
        let remaining = call.deadline().unwrap().remaining();
        assert!(remaining <= Duration::from_secs(5) && remaining > Duration::from_secs(4));
        assert_eq!(grpc.extensions.get::<Deadline>(), call.deadline().as_ref());

        let mut connect = head("application/json", &[("connect-timeout-ms", "1500")]);
        let call = Call::read(&mut connect, Some(Duration::from_secs(60))).unwrap();
        assert!(call.deadline().unwrap().remaining() <= Duration::from_millis(1500));

        // Each reads its own header only.
        let mut crossed = head("application/proto", &[("grpc-timeout", "1S")]);
        assert!(Call::read(&mut crossed, None).unwrap().deadline().is_none());
        let mut crossed = head("application/grpc", &[("connect-timeout-ms", "1")]);
        assert!(Call::read(&mut crossed, None).unwrap().deadline().is_none());

        let mut default = head("application/grpc-web", &[]);
        let call = Call::read(&mut default, Some(Duration::from_secs(2))).unwrap();
        assert!(call.deadline().unwrap().remaining() <= Duration::from_secs(2));
    }

    #[tokio::test]
    async fn a_malformed_timeout_is_refused_in_the_call_s_protocol() {
        let mut grpc = head("application/grpc+json", &[("grpc-timeout", "soon")]);
        let refused = Call::read(&mut grpc, None).unwrap_err();
        assert_eq!(refused.headers()["grpc-status"], "13");
        assert_eq!(refused.headers()["content-type"], "application/grpc+json");

        let mut connect = head("application/proto", &[("connect-timeout-ms", "1.5")]);
        let refused = Call::read(&mut connect, None).unwrap_err();
        assert_eq!(refused.status(), http::StatusCode::BAD_REQUEST);
        assert_eq!(refused.headers()["content-type"], "application/json");
    }

    #[test]
    fn only_a_connect_unary_call_asked_once_is_answered_in_its_own_form() {
        let mut grpc = Call::of_request(
            &http::Request::post("/pkg.Svc/M")
                .header("content-type", "application/grpc")
                .body(RequestBody::empty())
                .unwrap(),
        );
        grpc.ask_own_form();
        assert_eq!(grpc.take_own_form(), None, "gRPC has no other form");

        let mut connect = Call::of_request(
            &http::Request::post("/pkg.Svc/M")
                .header("content-type", "application/json")
                .body(RequestBody::empty())
                .unwrap(),
        );
        assert_eq!(connect.take_own_form(), None, "nobody asked");
        connect.ask_own_form();
        assert!(!connect.answered_in_own_form());
        assert_eq!(
            connect.take_own_form().map(|wire| wire.format),
            Some(crate::codec::Format::Json)
        );
        assert_eq!(connect.take_own_form(), None, "the question is taken once");
        assert!(connect.answered_in_own_form());
    }

    #[test]
    fn a_timed_call_keeps_the_handler_s_reading_for_the_connection() {
        let opened = Instant::now() - Duration::from_millis(5);
        let mut call = Call::new(None);
        call.start_clock(opened);
        assert_eq!(call.started(), opened);
        let polled = call.first_poll_ended();
        assert_eq!(call.ended(), polled);

        let mut untimed = Call::new(None);
        assert!(untimed.started() > opened + Duration::from_millis(4));
        untimed.first_poll_ended();
        assert_eq!(untimed.polled(), None, "nobody timed it: nothing kept");
    }
}
