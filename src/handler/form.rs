//! Which form a unary call's answer takes: gRPC's, or Connect's own.
//!
//! The router serves a Connect unary call as a gRPC call and translates the gRPC-form answer
//! (`service::connect`). When nothing between the router and the handler reads that answer (no
//! observer, no tower layer: a generated server, perhaps behind interceptors), the router asks
//! the handler to answer in Connect's form at once, sparing the translation: a trailers map
//! built and read back, a status parsed, the reply's headers built twice.
//!
//! The question travels beside the call rather than in the request: an extension would cost a
//! hashed insert and remove on every call, and what the request carries is the user's to read.
//! It is one value of the thread, set for the length of the router's synchronous call into the
//! service. The first unary handler to start in that time takes it and then must answer every
//! outcome (reply, failure, panic) in Connect's form; the router reads afterwards whether one
//! did, and translates if not (a streaming handler answered, an interceptor refused, or the
//! call went on in a task where nobody asked). A streaming handler declines the question as it
//! starts, so that a unary handler it calls in-process cannot take it in its stead.
//!
//! The question names the call's format (protobuf or JSON), which the router has read from the
//! `content-type` already: a handler that takes it knows the call's wire without reading the
//! header again.

use std::cell::Cell;

use crate::protocol::{Format, Protocol, Wire};

/// Where the thread's current router call stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Asking {
    /// No router call is asking.
    No,
    /// A router call asks, for a Connect unary call in this format; no handler took the
    /// question yet.
    Asked(Format),
    /// A unary handler took it: it answers in Connect's form.
    Taken(Format),
    /// A streaming handler started first: the answer is in gRPC's form.
    Declined,
}

thread_local! {
    static ASKING: Cell<Asking> = const { Cell::new(Asking::No) };
}

/// The form a unary call's answer takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AnswerForm {
    /// gRPC's: what every layer and observer between the router and the handler reads.
    Grpc,
    /// Connect's unary form, for a Connect unary call in this format whose router asked for
    /// it.
    Connect(Format),
}

impl AnswerForm {
    /// The form the unary handler starting now answers in: [`Connect`](Self::Connect) if its
    /// router asked and no handler took the question yet (this one now has).
    pub(crate) fn take() -> AnswerForm {
        let asked = ASKING.try_with(|asking| match asking.get() {
            Asking::Asked(format) => {
                asking.set(Asking::Taken(format));
                Some(format)
            }
            Asking::No | Asking::Taken(_) | Asking::Declined => None,
        });
        match asked {
            Ok(Some(format)) => AnswerForm::Connect(format),
            _ => AnswerForm::Grpc,
        }
    }

    /// The wire of the call answered in this form, when the form tells it: a Connect unary
    /// call's, whose router read it.
    pub(crate) fn wire(self) -> Option<Wire> {
        match self {
            AnswerForm::Grpc => None,
            AnswerForm::Connect(format) => Some(Wire {
                protocol: Protocol::ConnectUnary,
                format,
            }),
        }
    }

    /// The form a streaming handler starting now answers in: always gRPC's. If its router
    /// asked and no handler took the question yet, this one declines it, so that a unary
    /// handler it calls in-process answers in gRPC's form too.
    pub(crate) fn decline() -> AnswerForm {
        let _ = ASKING.try_with(|asking| {
            if let Asking::Asked(_) = asking.get() {
                asking.set(Asking::Declined);
            }
        });
        AnswerForm::Grpc
    }
}

/// Runs `serve`, asking the unary handler it starts (if it starts one) to answer a Connect unary
/// call in `format` in Connect's form; gives `serve`'s answer and whether a handler took the
/// question. What the thread was asking before comes back afterwards, even if `serve` panics,
/// so a nested router call (a handler calling another service in-process) leaves the outer
/// one's question as it was.
pub(crate) fn asking<T>(format: Format, serve: impl FnOnce() -> T) -> (T, AnswerForm) {
    /// Puts the outer question back, also when unwinding.
    struct Restore(Asking);
    impl Drop for Restore {
        fn drop(&mut self) {
            let _ = ASKING.try_with(|asking| asking.set(self.0));
        }
    }
    let restore = Restore(ASKING.replace(Asking::Asked(format)));
    let answer = serve();
    let form = match ASKING.get() {
        Asking::Taken(format) => AnswerForm::Connect(format),
        Asking::No | Asking::Asked(_) | Asking::Declined => AnswerForm::Grpc,
    };
    drop(restore);
    (answer, form)
}

#[cfg(test)]
mod tests {
    use super::*;

    const CONNECT: AnswerForm = AnswerForm::Connect(Format::Proto);

    #[test]
    fn only_the_first_handler_asked_answers_in_connect_form() {
        assert_eq!(AnswerForm::take(), AnswerForm::Grpc, "nobody asked");
        let ((first, second), form) =
            asking(Format::Proto, || (AnswerForm::take(), AnswerForm::take()));
        assert_eq!((first, second), (CONNECT, AnswerForm::Grpc));
        assert_eq!(form, CONNECT);
        assert_eq!(AnswerForm::take(), AnswerForm::Grpc, "the question is gone");

        let ((), form) = asking(Format::Proto, || {});
        assert_eq!(form, AnswerForm::Grpc, "no handler took it");
    }

    #[test]
    fn the_question_tells_the_handler_the_call_s_wire() {
        let (taken, form) = asking(Format::Json, AnswerForm::take);
        assert_eq!(taken, AnswerForm::Connect(Format::Json));
        assert_eq!(form, taken);
        assert_eq!(
            taken.wire(),
            Some(Wire {
                protocol: Protocol::ConnectUnary,
                format: Format::Json
            })
        );
        assert_eq!(AnswerForm::Grpc.wire(), None, "the handler reads it itself");
    }

    #[test]
    fn a_streaming_handler_declines_for_what_it_calls() {
        let ((declined, inner), form) = asking(Format::Proto, || {
            (AnswerForm::decline(), AnswerForm::take())
        });
        assert_eq!((declined, inner), (AnswerForm::Grpc, AnswerForm::Grpc));
        assert_eq!(form, AnswerForm::Grpc);

        let ((taken, declined), form) = asking(Format::Proto, || {
            (AnswerForm::take(), AnswerForm::decline())
        });
        assert_eq!((taken, declined), (CONNECT, AnswerForm::Grpc));
        assert_eq!(form, CONNECT, "a later decline leaves the taken question");
    }

    #[test]
    fn a_nested_call_leaves_the_outer_question_as_it_was() {
        let ((inner, outer), form) = asking(Format::Proto, || {
            let (inner, _) = asking(Format::Proto, AnswerForm::take);
            (inner, AnswerForm::take())
        });
        assert_eq!(inner, CONNECT);
        assert_eq!(outer, CONNECT);
        assert_eq!(form, CONNECT);

        let result =
            std::panic::catch_unwind(|| asking(Format::Proto, || panic!("in the service")));
        assert!(result.is_err());
        assert_eq!(
            AnswerForm::take(),
            AnswerForm::Grpc,
            "a panic leaves nothing asked"
        );
    }
}
