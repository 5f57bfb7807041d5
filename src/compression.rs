//! Message compression (gzip, deflate, zstd) and `grpc-encoding` negotiation.
