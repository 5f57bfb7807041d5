//! The guide's examples (`docs/GUIDE.md`) as doc tests. They use the generated code of the
//! workspace's test protos, which the published crate does not build, so they run here; the
//! runtime crate shows the same guide in its documentation.

#![cfg(doctest)]

#[doc = include_str!("../docs/GUIDE.md")]
pub struct Guide;
