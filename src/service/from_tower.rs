//! Hosting tower services ([`TowerService`]: tonic-generated servers, tonic-health,
//! tonic-reflection, layered stacks) through [`FromTower`]. Each is driven the tower way
//! (`poll_ready`, then `call`, on a clone of the service) behind the [`FastService`] interface,
//! so such a call that completes at once is still answered inline.

use std::convert::Infallible;
use std::sync::Mutex;

use bytes::Bytes;
use tonic::Status;
use tower::ServiceExt;
use tower_service::Service;

use super::FastService;
use crate::FastFuture;
use crate::body::{RequestBody, ResponseBody};
use crate::handler::{Contained, ResponseFuture};

/// Errors of tower services and bodies, as tower passes them around.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// A tower service a fastgrpc server can host: HTTP requests with a [`RequestBody`] in, HTTP
/// responses with any body of `Bytes` out, errors that convert to a status. Implemented for
/// every such service (tonic-generated servers, tonic-health, tonic-reflection, layered stacks,
/// fastgrpc's own generated servers); the bounds are written here once.
pub trait TowerService:
    Service<http::Request<RequestBody>, Error: Into<BoxError>, Future: Send + 'static>
    + Clone
    + Send
    + 'static
{
    /// The body of the service's responses.
    type Body: http_body::Body<Data = Bytes, Error: Into<BoxError>> + Send + 'static;

    /// The response as an `http::Response` (what it already is; spelled out for the compiler).
    fn into_http(response: Self::Response) -> http::Response<Self::Body>;
}

impl<S, B> TowerService for S
where
    S: Service<http::Request<RequestBody>, Response = http::Response<B>> + Clone + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Into<BoxError>,
    B: http_body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    type Body = B;

    fn into_http(response: http::Response<B>) -> http::Response<B> {
        response
    }
}

/// A tower service served as a [`FastService`]: the way tower services are hosted, the
/// opposite of [`ForTonic`](crate::service::ForTonic).
pub(crate) struct FromTower<S> {
    /// The service every call clones. tower services need `&mut self` and are often not
    /// `Sync` (tower's concurrency limit is not), so the original sits behind a lock that is
    /// held only to clone it.
    service: Mutex<S>,
}

impl<S> FromTower<S> {
    pub(crate) fn new(service: S) -> Self {
        FromTower {
            service: Mutex::new(service),
        }
    }
}

impl<S: TowerService> FastService for FromTower<S> {
    fn call(&self, request: http::Request<RequestBody>) -> ResponseFuture {
        // A panic while the lock was held (in a user's `clone`) leaves the service intact.
        let service = self
            .service
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone();
        // The service is user code: a panic in it ends this call only. The status becomes a
        // response inside the one future, so a pending call costs one box, not two.
        FastFuture::from_future(async move {
            let called = Contained::new(async move {
                match service.oneshot(request).await {
                    Ok(response) => Ok(S::into_http(response).map(ResponseBody::new)),
                    Err(error) => Err(error_status(error.into())),
                }
            });
            Ok::<_, Infallible>(
                called
                    .await
                    .unwrap_or_else(|status| crate::protocol::grpc::status(&status)),
            )
        })
    }
}

/// The status a call ends with when a tower service (or one of its layers) fails.
///
/// A `Status` is kept as it is; tower's timeout becomes `DEADLINE_EXCEEDED` and its load
/// shedding `RESOURCE_EXHAUSTED` (tonic's choice, kept for compatibility); anything else is
/// looked for in the error's sources, or else is `UNKNOWN`, as tonic does.
pub(crate) fn error_status(error: BoxError) -> Status {
    if error.is::<tower::timeout::error::Elapsed>() {
        return Status::deadline_exceeded("the call timed out in the server");
    }
    if error.is::<tower::load_shed::error::Overloaded>() {
        return Status::resource_exhausted("the server is overloaded; retry later");
    }
    Status::from_error(error)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tonic::Code;

    #[test]
    fn errors_map_to_statuses() {
        let cases: [(BoxError, Code); 4] = [
            (
                Box::new(Status::permission_denied("no")),
                Code::PermissionDenied,
            ),
            (
                Box::new(tower::timeout::error::Elapsed::new()),
                Code::DeadlineExceeded,
            ),
            (
                Box::new(tower::load_shed::error::Overloaded::new()),
                Code::ResourceExhausted,
            ),
            ("something broke".into(), Code::Unknown),
        ];
        for (error, code) in cases {
            assert_eq!(error_status(error).code(), code);
        }
    }
}
