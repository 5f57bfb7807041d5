//! Calls the greeter with tonic's client: `cargo run --example greeter_client -- [NAME]`.
//!
//! Options: `--addr URL` (default http://127.0.0.1:50051). Any other argument is the name.

pub use protos::tonic_pb::helloworld;

use helloworld::HelloRequest;
use helloworld::greeter_client::GreeterClient;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut addr = "http://127.0.0.1:50051".to_string();
    let mut name = "world".to_string();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--addr" => addr = args.next().ok_or("--addr needs a value")?,
            _ => name = arg,
        }
    }
    let mut client = GreeterClient::connect(addr).await?;
    match client.say_hello(HelloRequest { name }).await {
        Ok(reply) => println!("{}", reply.into_inner().message),
        Err(status) => println!("error: {:?}: {}", status.code(), status.message()),
    }
    Ok(())
}
