//! The service generator: a trait and a server per protobuf service.
//!
//! For `service Greeter` in package `helloworld` it emits a module `greeter_server` with
//! - `trait Greeter`, one method per RPC taking `Request<In>` (`Request<Streaming<In>>` for a
//!   request stream) and returning `impl RpcFuture<Out>`: any `Send` future of
//!   `Result<Response<Out>, Status>`, so an `async fn` or a `FastFuture`. A reply stream is
//!   declared by an associated type `<Method>Stream`, as in tonic;
//!   each has a default body answering `UNIMPLEMENTED`, so a service may leave methods out;
//! - `struct GreeterServer<T>`, which routes a call to its method through the runtime's
//!   handler functions and implements `FastService`, `NamedService` and tower's `Service`.
//!
//! The code is built with `quote` and formatted by prost-build (prettyplease) with the rest of
//! the file.

use std::collections::BTreeMap;

use heck::ToSnakeCase;
use proc_macro2::{Ident, Span, TokenStream};
use prost_build::{Comments, Method, Service, ServiceGenerator};
use quote::{format_ident, quote};

pub(crate) struct ServerGenerator {
    runtime: syn::Path,
    /// Methods (`package.Service.Method`) whose handlers always run in a spawned task.
    spawned_methods: Vec<String>,
    /// The `google.api.http` tables of the services that have rules, by full name.
    http_rules: BTreeMap<String, TokenStream>,
}

impl ServerGenerator {
    pub(crate) fn new(
        runtime: syn::Path,
        spawned_methods: Vec<String>,
        http_rules: BTreeMap<String, TokenStream>,
    ) -> Self {
        ServerGenerator {
            runtime,
            spawned_methods,
            http_rules,
        }
    }
}

impl ServiceGenerator for ServerGenerator {
    fn generate(&mut self, service: Service, buf: &mut String) {
        let http_rules = self.http_rules.get(&full_service_name(&service));
        let module = server_module(&self.runtime, &service, &self.spawned_methods, http_rules);
        buf.push_str(&module.to_string());
        buf.push('\n');
    }
}

fn server_module(
    runtime: &syn::Path,
    service: &Service,
    spawned_methods: &[String],
    http_rules: Option<&TokenStream>,
) -> TokenStream {
    let module = format_ident!("{}_server", service.name.to_snake_case());
    let trait_name = rust_ident(&service.name);
    let server = format_ident!("{}Server", service.name);
    let full_name = full_service_name(service);

    let trait_docs = doc_attrs(&service.comments);
    let stream_types = service
        .methods
        .iter()
        .filter(|m| m.server_streaming)
        .map(stream_type);
    let trait_methods = service.methods.iter().map(|m| trait_method(service, m));
    let method_names = service.methods.iter().map(|method| &method.proto_name);
    let routes = service.methods.iter().enumerate().map(|(index, m)| {
        let spawned = spawned_methods.contains(&format!("{full_name}.{}", m.proto_name));
        route(service, m, index, spawned)
    });
    let method_count = service.methods.len();
    let module_doc =
        format!(" Server side of `{full_name}`: the trait to implement and its server.");
    let http_rules_method = http_rules.map(|_| {
        quote! {
            fn http_rules(&self) -> &'static [rest::Rule] {
                HTTP_RULES
            }

            fn openapi(&self) -> ::core::option::Option<&'static str> {
                ::core::option::Option::Some(OPENAPI)
            }
        }
    });
    let server_doc = format!(
        " Serves a [`{trait_name}`] implementation: `Server::builder().add_service({server}::new(service))`."
    );

    quote! {
        #[doc = #module_doc]
        pub mod #module {
            #![allow(unused_imports, dead_code, missing_docs, clippy::let_unit_value)]
            use #runtime::codegen::*;

            #trait_docs
            pub trait #trait_name: Send + Sync + 'static {
                #(#stream_types)*
                #(#trait_methods)*
            }

            #[doc = #server_doc]
            pub struct #server<T> {
                inner: Arc<T>,
                config: HandlerConfig,
                costs: MethodCosts,
            }

            impl<T: #trait_name> #server<T> {
                /// Hosts `service`.
                pub fn new(service: T) -> Self {
                    Self::from_arc(Arc::new(service))
                }

                /// Hosts a `service` that is shared with other owners.
                pub fn from_arc(service: Arc<T>) -> Self {
                    // So that an `Any` of this package's messages has its JSON form.
                    super::register_json_types();
                    Self { inner: service, config: HandlerConfig::default(), costs: MethodCosts::new(#method_count) }
                }

                /// Hosts `service` behind `interceptor`, which sees each call's metadata and
                /// method first and may refuse it with a status.
                pub fn with_interceptor<I: Interceptor>(service: T, interceptor: I) -> Intercepted<Self, I> {
                    Intercepted::new(Self::new(service), interceptor)
                }

                #[doc = concat!(
                    " Limits the size of a decoded request message (default ",
                    #runtime::codegen::default_max_receive_message_mib!(),
                    " MiB); larger"
                )]
                /// requests get `RESOURCE_EXHAUSTED`.
                pub fn max_decoding_message_size(mut self, limit: usize) -> Self {
                    self.config = self.config.max_decoding_message_size(limit);
                    self
                }

                /// Limits the size of an encoded reply message (default: no limit); a larger
                /// reply ends its call with `RESOURCE_EXHAUSTED`.
                pub fn max_encoding_message_size(mut self, limit: usize) -> Self {
                    self.config = self.config.max_encoding_message_size(limit);
                    self
                }

                /// Accepts requests compressed with `encoding` too. gzip is accepted by default
                /// (as C-core and grpc-go do); requests in other encodings get `UNIMPLEMENTED`.
                /// Failed calls, and replies to clients that send a `grpc-accept-encoding` of
                /// their own, announce the accepted encodings in `grpc-accept-encoding`.
                pub fn accept_compressed(mut self, encoding: CompressionEncoding) -> Self {
                    self.config = self.config.accept_compressed(encoding);
                    self
                }

                /// Refuses compressed requests, gzip included, with `UNIMPLEMENTED` (until
                /// `accept_compressed` enables an encoding again). A compressed request is
                /// always decompressed within `max_decoding_message_size`, so accepting gzip
                /// does not open the door to decompression bombs; this is for services that
                /// want no compression at all.
                pub fn refuse_compressed_requests(mut self) -> Self {
                    self.config = self.config.refuse_compressed_requests();
                    self
                }

                /// Compresses replies with `encoding` when the client accepts it; the first
                /// encoding enabled this way that the client accepts is used.
                pub fn send_compressed(mut self, encoding: CompressionEncoding) -> Self {
                    self.config = self.config.send_compressed(encoding);
                    self
                }

                /// Where calls start, overriding the adaptive default: `true` always inline,
                /// on the connection's thread, however long they compute; `false` always in a
                /// spawned task. By default each method starts its calls inline while they
                /// are cheap and spawns them once they compute for longer than
                /// [`inline_cost_limit`](Self::inline_cost_limit).
                pub fn run_inline(mut self, enabled: bool) -> Self {
                    self.config = self.config.run_inline(enabled);
                    self
                }

                /// With adaptive inline (the default), spawns the calls of a method whose
                /// calls are estimated to compute for longer than `limit` before they answer
                #[doc = concat!(
                    " or first wait (default ",
                    #runtime::codegen::default_inline_cost_limit_us!(),
                    " µs)."
                )]
                pub fn inline_cost_limit(mut self, limit: Duration) -> Self {
                    self.config = self.config.inline_cost_limit(limit);
                    self
                }

                /// Fails a call with `DEADLINE_EXCEEDED` when its request stream stays silent
                /// for `timeout` while the handler waits for a message.
                pub fn receive_idle_timeout(mut self, timeout: Duration) -> Self {
                    self.config = self.config.receive_idle_timeout(timeout);
                    self
                }
            }

            impl<T> Clone for #server<T> {
                fn clone(&self) -> Self {
                    Self { inner: Arc::clone(&self.inner), config: self.config, costs: self.costs.clone() }
                }
            }

            impl<T> ::core::fmt::Debug for #server<T> {
                fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                    f.debug_struct(stringify!(#server)).field("config", &self.config).finish_non_exhaustive()
                }
            }

            impl<T> NamedService for #server<T> {
                const NAME: &'static str = #full_name;
            }

            impl<T: #trait_name> FastService for #server<T> {
                fn call(&self, request: http::Request<RequestBody>) -> ResponseFuture {
                    let mut call = Call::of_request(&request);
                    self.serve(request, &mut call)
                }

                fn serve(&self, request: http::Request<RequestBody>, call: &mut Call) -> ResponseFuture {
                    match request.uri().path() {
                        #(#routes)*
                        path => unimplemented_method(path),
                    }
                }

                fn method_names(&self) -> &'static [&'static str] {
                    &[#(#method_names),*]
                }

                fn max_request_size(&self) -> usize {
                    self.config.max_request_size()
                }

                fn accepted_encodings(&self) -> &[#runtime::CompressionEncoding] {
                    self.config.accepted_encodings()
                }

                #http_rules_method
            }

            #http_rules

            #runtime::codegen::tower_service_of_fast_service!(<T: #trait_name> #server<T>);
        }
    }
}

/// The associated type a server-streaming method's reply stream is declared with, as in tonic.
fn stream_type(method: &Method) -> TokenStream {
    let name = stream_type_name(method);
    let output = output_type(method);
    let doc = format!(" The stream of replies `{}` returns.", method.name);
    quote! {
        #[doc = #doc]
        type #name: Stream<Item = Result<#output, Status>> + Send + 'static;
    }
}

fn stream_type_name(method: &Method) -> Ident {
    format_ident!("{}Stream", method.proto_name)
}

fn trait_method(service: &Service, method: &Method) -> TokenStream {
    let name = rust_ident(&method.name);
    let input = input_type(method);
    let request = if method.client_streaming {
        quote! { Request<Streaming<#input>> }
    } else {
        quote! { Request<#input> }
    };
    let reply = if method.server_streaming {
        let stream = stream_type_name(method);
        quote! { Self::#stream }
    } else {
        let output = output_type(method);
        quote! { #output }
    };
    let docs = doc_attrs(&method.comments);
    let unimplemented = format!(
        "{}/{} is not implemented",
        full_service_name(service),
        method.proto_name
    );
    quote! {
        #docs
        fn #name(&self, request: #request) -> impl RpcFuture<#reply> {
            let _ = request;
            FastFuture::err(Status::unimplemented(#unimplemented))
        }
    }
}

fn route(service: &Service, method: &Method, index: usize, spawned: bool) -> TokenStream {
    let name = rust_ident(&method.name);
    let path = format!("/{}/{}", full_service_name(service), method.proto_name);
    let handler = match (method.client_streaming, method.server_streaming) {
        (false, false) => quote! { unary },
        (false, true) => quote! { server_streaming },
        (true, false) => quote! { client_streaming },
        (true, true) => quote! { streaming },
    };
    let mut config = quote! { self.config.method(&self.costs, #index) };
    if spawned {
        config = quote! { #config.spawned() };
    }
    if no_side_effects(method) {
        config = quote! { #config.no_side_effects() };
    }
    quote! {
        #path => {
            let service = Arc::clone(&self.inner);
            #handler(request, call, #config, move |request| async move { service.#name(request).await })
        }
    }
}

/// Whether the method's proto says `option idempotency_level = NO_SIDE_EFFECTS`: the Connect
/// protocol may then call it with GET.
fn no_side_effects(method: &Method) -> bool {
    method.options.idempotency_level
        == Some(prost_types::method_options::IdempotencyLevel::NoSideEffects as i32)
}

fn full_service_name(service: &Service) -> String {
    if service.package.is_empty() {
        service.proto_name.clone()
    } else {
        format!("{}.{}", service.package, service.proto_name)
    }
}

/// The Rust type of a method's request message: `()` for `google.protobuf.Empty`, as prost
/// and tonic have it (the messages' own fields of that type are `fastgrpc::types::Empty`).
fn input_type(method: &Method) -> syn::Type {
    method_message_type(&method.input_type, &method.input_proto_type)
}

/// The Rust type of a method's reply message, as [`input_type`] has it.
fn output_type(method: &Method) -> syn::Type {
    method_message_type(&method.output_type, &method.output_proto_type)
}

fn method_message_type(rust_path: &str, proto_type: &str) -> syn::Type {
    if proto_type == ".google.protobuf.Empty" {
        return syn::parse_quote!(());
    }
    message_type(rust_path)
}

/// The Rust type of a message, seen from inside the generated `<service>_server` module.
fn message_type(rust_path: &str) -> syn::Type {
    let absolute =
        rust_path.starts_with("::") || rust_path.starts_with("crate::") || rust_path == "()";
    let path = if absolute {
        rust_path.to_owned()
    } else {
        format!("super::{rust_path}")
    };
    syn::parse_str(&path)
        .unwrap_or_else(|error| panic!("prost gave an unparsable type path {path:?}: {error}"))
}

/// An identifier, raw (`r#type`) if the name is a Rust keyword.
fn rust_ident(name: &str) -> Ident {
    let name = name.strip_prefix("r#").unwrap_or(name);
    match syn::parse_str::<Ident>(name) {
        Ok(ident) => ident,
        Err(_) => Ident::new_raw(name, Span::call_site()),
    }
}

/// A proto comment as doc attributes, sanitized as prost-build does for messages (escaped
/// brackets, URLs in angle brackets), so comments cannot turn into broken intra-doc links.
fn doc_attrs(comments: &Comments) -> TokenStream {
    let leading = Comments {
        leading_detached: Vec::new(),
        leading: comments.leading.clone(),
        trailing: comments.trailing.clone(),
    };
    let mut rendered = String::new();
    leading.append_with_indent(0, &mut rendered);
    let lines = rendered
        .lines()
        .filter_map(|line| line.strip_prefix("///"))
        .map(|line| quote! { #[doc = #line] });
    quote! { #(#lines)* }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_types_are_relative_to_the_parent_module_unless_absolute() {
        let cases = [
            ("HelloRequest", "super :: HelloRequest"),
            ("super::other::Msg", "super :: super :: other :: Msg"),
            ("::prost_types::Any", ":: prost_types :: Any"),
            ("()", "()"),
        ];
        for (input, expected) in cases {
            let ty = message_type(input);
            assert_eq!(quote!(#ty).to_string(), expected);
        }
    }

    #[test]
    fn doc_comments_are_sanitized_like_prost_messages() {
        let comments = Comments {
            leading_detached: Vec::new(),
            leading: vec![" Returns [the] reply.".to_owned()],
            trailing: Vec::new(),
        };
        let docs = doc_attrs(&comments).to_string();
        assert!(docs.contains(r"\\[the\\]"), "{docs}");
    }

    fn method(name: &str) -> Method {
        Method {
            name: name.to_lowercase(),
            proto_name: name.to_owned(),
            comments: Comments::default(),
            input_type: "In".to_owned(),
            output_type: "Out".to_owned(),
            input_proto_type: ".pkg.In".to_owned(),
            output_proto_type: ".pkg.Out".to_owned(),
            options: Default::default(),
            client_streaming: false,
            server_streaming: false,
        }
    }

    #[test]
    fn spawned_methods_route_with_inline_off_and_others_do_not() {
        let service = Service {
            name: "Svc".to_owned(),
            proto_name: "Svc".to_owned(),
            package: "pkg".to_owned(),
            comments: Comments::default(),
            methods: vec![method("Heavy"), method("Light")],
            options: Default::default(),
        };
        let runtime: syn::Path = syn::parse_str("::fastgrpc").unwrap();
        let code =
            server_module(&runtime, &service, &["pkg.Svc.Heavy".to_owned()], None).to_string();
        let heavy = code.find("\"/pkg.Svc/Heavy\"").unwrap();
        let light = code.find("\"/pkg.Svc/Light\"").unwrap();
        let spawned = code
            .find(". spawned ()")
            .expect("the spawned method turns inline off");
        assert!(
            heavy < spawned && spawned < light,
            "only Heavy's route does"
        );
        assert_eq!(code.matches(". spawned ()").count(), 1);
    }

    #[test]
    fn methods_without_side_effects_are_marked_for_get() {
        let mut safe = method("Get");
        safe.options.idempotency_level =
            Some(prost_types::method_options::IdempotencyLevel::NoSideEffects as i32);
        let mut idempotent = method("Put");
        idempotent.options.idempotency_level =
            Some(prost_types::method_options::IdempotencyLevel::Idempotent as i32);
        let service = Service {
            name: "Svc".to_owned(),
            proto_name: "Svc".to_owned(),
            package: "pkg".to_owned(),
            comments: Comments::default(),
            methods: vec![safe, idempotent, method("Post")],
            options: Default::default(),
        };
        let runtime: syn::Path = syn::parse_str("::fastgrpc").unwrap();
        let code = server_module(&runtime, &service, &[], None).to_string();
        assert_eq!(code.matches(". no_side_effects ()").count(), 1, "{code}");
        let get = code.find("\"/pkg.Svc/Get\"").unwrap();
        let marked = code.find(". no_side_effects ()").unwrap();
        let put = code.find("\"/pkg.Svc/Put\"").unwrap();
        assert!(get < marked && marked < put, "only Get's route is marked");
    }

    #[test]
    fn keywords_become_raw_identifiers() {
        assert_eq!(rust_ident("type").to_string(), "r#type");
        assert_eq!(rust_ident("r#match").to_string(), "r#match");
        assert_eq!(rust_ident("say_hello").to_string(), "say_hello");
    }
}
