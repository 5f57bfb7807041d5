//! `/metrics` in Prometheus's text format, for `greeter_server --metrics-addr`: OpenTelemetry's
//! Prometheus exporter (`opentelemetry-prometheus`) behind a meter provider the server records
//! into, served over HTTP/1.1 by hyper.

use std::convert::Infallible;

use bytes::Bytes;
use http_body_util::Full;
use opentelemetry_sdk::metrics::SdkMeterProvider;
use prometheus::{Encoder, Registry, TextEncoder};
use tokio::net::TcpListener;

/// A meter provider whose metrics are exported to the returned registry.
pub fn provider() -> Result<(SdkMeterProvider, Registry), opentelemetry_sdk::error::OTelSdkError> {
    let registry = Registry::new();
    let exporter = opentelemetry_prometheus::exporter()
        .with_registry(registry.clone())
        .build()?;
    let provider = SdkMeterProvider::builder().with_reader(exporter).build();
    Ok((provider, registry))
}

/// Serves `registry` at `GET /metrics` on `listener`, until the task is dropped; any other
/// request gets 404.
pub async fn serve(listener: TcpListener, registry: Registry) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        let registry = registry.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |request| {
                std::future::ready(Ok::<_, Infallible>(answer(&registry, &request)))
            });
            let io = hyper_util::rt::TokioIo::new(stream);
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(io, service)
                .await;
        });
    }
}

fn answer<B>(registry: &Registry, request: &http::Request<B>) -> http::Response<Full<Bytes>> {
    if request.method() != http::Method::GET || request.uri().path() != "/metrics" {
        let mut response = http::Response::new(Full::new(Bytes::from_static(b"not found\n")));
        *response.status_mut() = http::StatusCode::NOT_FOUND;
        return response;
    }
    let encoder = TextEncoder::new();
    let mut text = Vec::new();
    if let Err(error) = encoder.encode(&registry.gather(), &mut text) {
        let mut response = http::Response::new(Full::new(Bytes::from(error.to_string())));
        *response.status_mut() = http::StatusCode::INTERNAL_SERVER_ERROR;
        return response;
    }
    let mut response = http::Response::new(Full::new(Bytes::from(text)));
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_str(encoder.format_type()).expect("a valid content type"),
    );
    response
}
