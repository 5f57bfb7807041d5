//! Deadlines (`grpc-timeout`) and idle timeouts that reset in place.
