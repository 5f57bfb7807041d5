//! ProtoJSON, the canonical JSON mapping of proto3 (protobuf.dev, "ProtoJSON Format"), as the
//! messages `fastgrpc-build` generates write and read it: one test per rule, both directions,
//! and round trips.

use serde_json::{Value, json};
use support::pb::jsontest::{Color, Nested, Scalars, WellKnown, scalars};

use fastgrpc::internals::codec::{decode_json, write_json};

/// `message` as the server writes it.
fn to_json<M: serde::Serialize + 'static>(message: &M) -> Value {
    let mut out = Vec::new();
    write_json(message, &mut out).expect("serializes");
    serde_json::from_slice(&out).expect("valid JSON")
}

/// A message as the server reads it from `json`.
fn from_json<M: serde::de::DeserializeOwned + 'static>(json: Value) -> M {
    decode_json(json.to_string().as_bytes())
        .unwrap_or_else(|error| panic!("{json} reads: {error:?}"))
}

/// Whether the server refuses `json`, with `INVALID_ARGUMENT`.
fn refused<M: serde::de::DeserializeOwned + 'static>(json: Value) -> bool {
    match decode_json::<M>(json.to_string().as_bytes()) {
        Ok(_) => false,
        Err(status) => {
            assert_eq!(status.code(), fastgrpc::Code::InvalidArgument, "{status:?}");
            true
        }
    }
}

#[test]
fn default_values_are_left_out() {
    assert_eq!(to_json(&Scalars::default()), json!({}));
    assert_eq!(to_json(&WellKnown::default()), json!({}));
}

#[test]
fn field_names_are_lower_camel_case_out_and_either_spelling_in() {
    let message = Scalars {
        snake_case_name: "x".into(),
        ..Default::default()
    };
    assert_eq!(to_json(&message), json!({ "snakeCaseName": "x" }));
    for name in ["snakeCaseName", "snake_case_name"] {
        let read: Scalars = from_json(json!({ name: "x" }));
        assert_eq!(read, message, "{name}");
    }
}

#[test]
fn sixty_four_bit_integers_are_strings_out_and_strings_or_numbers_in() {
    let message = Scalars {
        i64: -9_007_199_254_740_993,
        u64: u64::MAX,
        s64: -5,
        f64: 7,
        i32: -3,
        u32: u32::MAX,
        many: vec![1, -2],
        ..Default::default()
    };
    assert_eq!(
        to_json(&message),
        json!({
            "i64": "-9007199254740993",
            "u64": "18446744073709551615",
            "s64": "-5",
            "f64": "7",
            "i32": -3,
            "u32": 4_294_967_295u32,
            "many": ["1", "-2"],
        })
    );
    let numbers: Scalars = from_json(json!({
        "i64": -9_007_199_254_740_993i64, "u64": u64::MAX, "s64": -5, "f64": 7,
        "i32": "-3", "u32": 4_294_967_295u32, "many": [1, "-2"],
    }));
    assert_eq!(numbers, message);
    assert!(refused::<Scalars>(json!({ "i32": 2_147_483_648i64 })));
    assert!(refused::<Scalars>(json!({ "i64": "12x" })));
}

#[test]
fn enums_are_names_out_and_names_or_numbers_in() {
    let message = Scalars {
        color: Color::Red.into(),
        colors: vec![Color::Green.into(), Color::Unspecified.into()],
        ..Default::default()
    };
    let json = json!({ "color": "COLOR_RED", "colors": ["COLOR_GREEN", "COLOR_UNSPECIFIED"] });
    assert_eq!(to_json(&message), json);
    assert_eq!(from_json::<Scalars>(json), message);
    let by_number: Scalars = from_json(json!({ "color": 1, "colors": [2, 0] }));
    assert_eq!(by_number, message);
    assert!(refused::<Scalars>(json!({ "color": "COLOR_BLUE" })));
}

#[test]
fn bytes_are_standard_base64_out_and_either_alphabet_in() {
    let message = Scalars {
        by: vec![0xfb, 0xff, 0xfe, 0x01],
        ..Default::default()
    };
    assert_eq!(to_json(&message), json!({ "by": "+//+AQ==" }));
    for text in ["+//+AQ==", "+//+AQ", "-__-AQ==", "-__-AQ"] {
        let read: Scalars = from_json(json!({ "by": text }));
        assert_eq!(read, message, "{text}");
    }
    assert!(refused::<Scalars>(json!({ "by": "not base64!" })));
}

#[test]
fn non_finite_floats_are_strings_both_ways() {
    for (value, text) in [
        (f64::INFINITY, "Infinity"),
        (f64::NEG_INFINITY, "-Infinity"),
    ] {
        let message = Scalars {
            d: value,
            f: value as f32,
            ..Default::default()
        };
        assert_eq!(to_json(&message), json!({ "d": text, "f": text }));
        assert_eq!(
            from_json::<Scalars>(json!({ "d": text, "f": text })),
            message
        );
    }
    let nan = Scalars {
        d: f64::NAN,
        ..Default::default()
    };
    assert_eq!(to_json(&nan), json!({ "d": "NaN" }));
    assert!(from_json::<Scalars>(json!({ "d": "NaN" })).d.is_nan());
    let plain: Scalars = from_json(json!({ "d": 1.5, "f": "2.5" }));
    assert_eq!((plain.d, plain.f), (1.5, 2.5));
}

#[test]
fn null_is_the_default_value() {
    let read: Scalars = from_json(json!({
        "s": null, "i64": null, "color": null, "child": null, "many": null, "counts": null,
    }));
    assert_eq!(read, Scalars::default());
}

#[test]
fn oneofs_write_the_set_member_and_read_any_one() {
    for (choice, json) in [
        (scalars::Choice::Text("t".into()), json!({ "text": "t" })),
        (scalars::Choice::Number(-4), json!({ "number": "-4" })),
        (
            scalars::Choice::Nested(Nested { value: "v".into() }),
            json!({ "nested": { "value": "v" } }),
        ),
    ] {
        let message = Scalars {
            choice: Some(choice),
            ..Default::default()
        };
        assert_eq!(to_json(&message), json);
        assert_eq!(from_json::<Scalars>(json), message);
    }
    assert!(refused::<Scalars>(json!({ "text": "t", "number": "1" })));
}

#[test]
fn maps_are_objects_with_string_keys() {
    let message = Scalars {
        counts: [("a".to_owned(), 1i64)].into(),
        names: [(-7, "seven".to_owned())].into(),
        ..Default::default()
    };
    let json = json!({ "counts": { "a": "1" }, "names": { "-7": "seven" } });
    assert_eq!(to_json(&message), json);
    assert_eq!(from_json::<Scalars>(json), message);
}

#[test]
fn optional_fields_are_written_when_set_even_to_zero() {
    let message = Scalars {
        maybe: Some(0),
        ..Default::default()
    };
    assert_eq!(to_json(&message), json!({ "maybe": 0 }));
    assert_eq!(from_json::<Scalars>(json!({ "maybe": 0 })), message);
}

#[test]
fn unknown_fields_are_refused() {
    assert!(refused::<Scalars>(json!({ "nope": 1 })));
    assert!(refused::<Nested>(json!({ "value": "v", "extra": true })));
    assert!(refused::<Scalars>(json!({ "s": 5 })), "a wrong type too");
    assert!(refused::<Scalars>(json!([])), "not an object");
}

#[test]
fn well_known_types_have_their_special_forms() {
    let json = json!({
        "at": "1972-01-01T10:00:20.021Z",
        "took": "1.500s",
        "meta": { "k": [1.0, "two", null, true, { "x": {} }] },
        "value": "just a string",
        "list": [1.0, "a"],
        "big": "9007199254740993",
        "name": "wrapped",
        "flag": false,
        "raw": "AQI=",
        "nothing": {},
        "ratio": "NaN",
        "small": 7,
    });
    let message: WellKnown = from_json(json.clone());
    let at = message.at.unwrap();
    assert_eq!((at.seconds, at.nanos), (63_108_020, 21_000_000));
    let took = message.took.unwrap();
    assert_eq!((took.seconds, took.nanos), (1, 500_000_000));
    assert_eq!(message.big.clone().unwrap().value, 9_007_199_254_740_993);
    assert_eq!(message.name.clone().unwrap().value, "wrapped");
    assert!(
        !message.flag.clone().unwrap().value,
        "a wrapper set to its default is set"
    );
    assert_eq!(&message.raw.clone().unwrap().value[..], &[1, 2]);
    assert!(message.nothing.is_some());
    assert!(message.ratio.clone().unwrap().value.is_nan());
    assert_eq!(message.small.clone().unwrap().value, 7);
    let written = to_json(&message);
    for field in [
        "at", "meta", "value", "list", "big", "name", "flag", "raw", "nothing", "small",
    ] {
        assert_eq!(written[field], json[field], "{field}");
    }
    assert_eq!(written["ratio"], "NaN");
    // Durations are written with 0, 3, 6 or 9 fractional digits.
    assert_eq!(written["took"], "1.500s");
}

#[test]
fn a_field_mask_is_a_comma_separated_string_of_camel_case_paths() {
    let json = json!({ "mask": "user.displayName,photo" });
    let message: WellKnown = from_json(json.clone());
    assert_eq!(
        message.mask.clone().unwrap().paths,
        ["user.display_name", "photo"]
    );
    assert_eq!(to_json(&message), json);
}

#[test]
fn round_trips_keep_every_field() {
    let message = Scalars {
        i32: 1,
        i64: 2,
        u64: 3,
        s64: -4,
        f64: 5,
        d: 6.25,
        f: -7.5,
        b: true,
        s: "ünïcode \"quoted\"\n".into(),
        by: vec![0, 255],
        color: Color::Green.into(),
        snake_case_name: "n".into(),
        maybe: Some(9),
        many: vec![10, 11],
        counts: [("x".to_owned(), 12i64)].into(),
        names: [(13, "y".to_owned())].into(),
        choice: Some(scalars::Choice::Number(14)),
        child: Some(Nested { value: "z".into() }),
        u32: 15,
        colors: vec![Color::Red.into()],
    };
    let again: Scalars = from_json(to_json(&message));
    assert_eq!(again, message);
}

#[test]
fn an_any_is_its_message_s_json_with_its_type() {
    use prost::Message;
    support::pb::jsontest::register_json_types();
    let packed = Scalars {
        i64: 5,
        s: "in".into(),
        ..Default::default()
    };
    let message = WellKnown {
        any: Some(fastgrpc::types::Any {
            type_url: "type.googleapis.com/jsontest.Scalars".into(),
            value: packed.encode_to_vec(),
        }),
        ..Default::default()
    };
    let json = json!({ "any": { "@type": "type.googleapis.com/jsontest.Scalars", "i64": "5", "s": "in" } });
    assert_eq!(to_json(&message), json);
    assert_eq!(from_json::<WellKnown>(json), message);

    // A well-known type with a special form keeps it under "value".
    let duration = fastgrpc::types::Duration {
        seconds: 1,
        nanos: 500_000_000,
    };
    let message = WellKnown {
        any: Some(fastgrpc::types::Any {
            type_url: "type.googleapis.com/google.protobuf.Duration".into(),
            value: duration.encode_to_vec(),
        }),
        ..Default::default()
    };
    let json = json!({ "any": { "@type": "type.googleapis.com/google.protobuf.Duration", "value": "1.500s" } });
    assert_eq!(to_json(&message), json);
    assert_eq!(from_json::<WellKnown>(json), message);

    // A type nobody registered, a missing @type, or a field the packed message lacks.
    assert!(refused::<WellKnown>(
        json!({ "any": { "@type": "type.googleapis.com/no.Such" } })
    ));
    assert!(refused::<WellKnown>(json!({ "any": { "s": "x" } })));
    assert!(refused::<WellKnown>(
        json!({ "any": { "@type": "type.googleapis.com/jsontest.Scalars", "nope": 1 } })
    ));
    let unknown = WellKnown {
        any: Some(fastgrpc::types::Any {
            type_url: "type.googleapis.com/no.Such".into(),
            value: Vec::new(),
        }),
        ..Default::default()
    };
    assert!(write_json(&unknown, &mut Vec::new()).is_err());
}
