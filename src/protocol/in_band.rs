//! A reply body whose trailers travel in its last data frame: how gRPC-Web and the Connect
//! protocol's streams answer clients that cannot read HTTP trailers (browsers, HTTP/1.1). Each
//! protocol says how its frames are written ([`InBand`]); the body is written once, here.

use std::pin::Pin;
use std::task::{Context, Poll, ready};

use bytes::Bytes;
use http::HeaderMap;
use http_body::{Body, Frame};
use tonic::Status;

use crate::body::ResponseBody;
use crate::status;

/// How a protocol writes a body with its trailers in band.
pub(crate) trait InBand: Unpin {
    /// A data frame as sent.
    fn data(&self, data: Bytes) -> Bytes {
        data
    }

    /// The frame that carries `trailers` (a gRPC-form answer's status and trailing metadata),
    /// before [`data`](Self::data) is applied to it.
    fn trailers(&self, trailers: &HeaderMap) -> Bytes;
}

/// `inner`, a gRPC-form reply body, with its trailers (or the error it failed with) moved into a
/// last data frame as `protocol` writes it.
pub(crate) fn in_band<P: InBand + Send + 'static>(
    inner: ResponseBody,
    protocol: P,
) -> ResponseBody {
    ResponseBody::new(TrailersInBand {
        inner: Some(inner),
        protocol,
    })
}

struct TrailersInBand<P> {
    /// `None` once the trailers' frame is out.
    inner: Option<ResponseBody>,
    protocol: P,
}

impl<P: InBand> Body for TrailersInBand<P> {
    type Data = Bytes;
    type Error = Status;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Status>>> {
        let this = self.get_mut();
        let Some(inner) = this.inner.as_mut() else {
            return Poll::Ready(None);
        };
        let trailers = match ready!(Pin::new(inner).poll_frame(cx)) {
            Some(Ok(frame)) => match frame.into_data() {
                Ok(data) => {
                    return Poll::Ready(Some(Ok(Frame::data(this.protocol.data(data)))));
                }
                Err(frame) => frame.into_trailers().unwrap_or_default(),
            },
            Some(Err(status)) => status::trailers(&status, HeaderMap::new()),
            // A body that ends without trailers (a hosted service's) still owes a status.
            None => status::ok_trailers(HeaderMap::new()),
        };
        this.inner = None;
        let frame = this.protocol.trailers(&trailers);
        Poll::Ready(Some(Ok(Frame::data(this.protocol.data(frame)))))
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_none()
    }
}
