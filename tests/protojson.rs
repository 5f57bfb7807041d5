//! ProtoJSON, the canonical JSON mapping of proto3 (protobuf.dev, "ProtoJSON Format"), as the
//! messages `fastgrpc-build` generates write and read it: one test per rule, both directions,
//! and round trips. The rules protobuf's conformance suite checks that an earlier generator
//! broke have a test each here too (`interop/protobuf/run.sh` runs the suite itself).

use serde_json::{Value, json};
use support::pb::jsontest::{Aliased, Color, Nested, Scalars, WellKnown, proto2, scalars};

use fastgrpc::internals::codec::{DecodeOptions, decode_json, write_json};

/// What a server asked to refuse unknown fields reads with.
const STRICT: DecodeOptions = DecodeOptions {
    reject_unknown_fields: true,
};

/// `message` as the server writes it.
fn to_json<M: serde::Serialize + 'static>(message: &M) -> Value {
    let mut out = Vec::new();
    write_json(message, &mut out).expect("serializes");
    serde_json::from_slice(&out).expect("valid JSON")
}

/// A message as the server reads it from `json` (text, so that numbers keep their notation).
fn from_text<M: serde::de::DeserializeOwned + 'static>(json: &str) -> M {
    decode_json(json.as_bytes(), DecodeOptions::default())
        .unwrap_or_else(|error| panic!("{json} reads: {error:?}"))
}

/// A message as the server reads it from `json`.
fn from_json<M: serde::de::DeserializeOwned + 'static>(json: Value) -> M {
    from_text(&json.to_string())
}

/// Whether the server refuses `json` (text), with `INVALID_ARGUMENT`, reading with `options`.
fn refused_text<M: serde::de::DeserializeOwned + 'static>(
    json: &str,
    options: DecodeOptions,
) -> bool {
    match decode_json::<M>(json.as_bytes(), options) {
        Ok(_) => false,
        Err(status) => {
            assert_eq!(status.code(), fastgrpc::Code::InvalidArgument, "{status:?}");
            true
        }
    }
}

/// Whether the server refuses `json`, with `INVALID_ARGUMENT`, whatever it does with unknown
/// fields.
fn refused<M: serde::de::DeserializeOwned + 'static>(json: Value) -> bool {
    let text = json.to_string();
    let refused = refused_text::<M>(&text, DecodeOptions::default());
    assert_eq!(refused_text::<M>(&text, STRICT), refused, "{text}");
    refused
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
fn integers_in_exponent_or_fraction_notation_are_read_when_exact() {
    for json in [
        r#"{"i32": 1e5}"#,
        r#"{"i32": 100000.000}"#,
        r#"{"i32": "1e5"}"#,
        r#"{"i32": "100000.0"}"#,
    ] {
        assert_eq!(from_text::<Scalars>(json).i32, 100_000, "{json}");
    }
    assert_eq!(
        from_text::<Scalars>(r#"{"u32": 4.294967295e9}"#).u32,
        u32::MAX
    );
    assert_eq!(
        from_text::<Scalars>(r#"{"i64": -2e18}"#).i64,
        -2_000_000_000_000_000_000
    );
    for json in [
        r#"{"i32": 1.5}"#,
        r#"{"i32": "1e-1"}"#,
        r#"{"u32": -1e0}"#,
        r#"{"i32": 3e9}"#,
    ] {
        assert!(
            refused_text::<Scalars>(json, DecodeOptions::default()),
            "{json}"
        );
    }
}

#[test]
fn a_float_beyond_its_range_is_refused_not_infinity() {
    for json in [
        r#"{"f": 3.502823e+38}"#,
        r#"{"f": -3.502823e+38}"#,
        r#"{"f": "3.502823e+38"}"#,
    ] {
        assert!(
            refused_text::<Scalars>(json, DecodeOptions::default()),
            "{json}"
        );
    }
    assert_eq!(
        from_text::<Scalars>(r#"{"f": 3.402823e+38}"#).f,
        3.402823e38
    );
    // A double may be as large as it likes, within its own range.
    assert_eq!(
        from_text::<Scalars>(r#"{"d": 3.502823e+38}"#).d,
        3.502823e38
    );
}

#[test]
fn doubles_are_read_and_written_exactly() {
    for value in [
        2.22507e-308_f64,
        -2.22507e-308,
        1.7976931348623157e308,
        5e-324,
        0.1,
    ] {
        let text = format!(r#"{{"d": {value:e}}}"#);
        let read: Scalars = from_text(&text);
        assert_eq!(read.d.to_bits(), value.to_bits(), "{text}");
        let mut written = Vec::new();
        write_json(&read, &mut written).unwrap();
        let again: Scalars = from_text(std::str::from_utf8(&written).unwrap());
        assert_eq!(again.d.to_bits(), value.to_bits(), "{text}");
    }
}

#[test]
fn bool_map_keys_are_read_however_escaped() {
    let read: Scalars = from_text(r#"{"flags": {"tr\u0075e": true, "false": false}}"#);
    assert_eq!(read.flags, [(true, true), (false, false)].into());
    assert_eq!(
        to_json(&Scalars {
            flags: [(true, false)].into(),
            ..Default::default()
        }),
        json!({ "flags": { "true": false } })
    );
    assert!(refused::<Scalars>(json!({ "flags": { "True": true } })));
    assert!(
        refused::<Scalars>(json!({ "names": { "1.0": "x" } })),
        "an int32 key"
    );
    assert!(
        refused::<Scalars>(json!({ "counts": { "a": null } })),
        "a null map value"
    );
    assert!(
        refused::<Scalars>(json!({ "many": ["1", null] })),
        "a null list element"
    );
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
    assert!(refused::<Scalars>(json!({ "color": 1.5 })));
}

#[test]
fn enums_are_read_by_any_alias_and_open_to_unknown_numbers() {
    let one = Scalars {
        aliased: Aliased::One.into(),
        ..Default::default()
    };
    for name in ["ALIASED_ONE", "ALIASED_UNO"] {
        assert_eq!(
            from_json::<Scalars>(json!({ "aliased": name })),
            one,
            "{name}"
        );
    }
    // Written by its first name.
    assert_eq!(to_json(&one), json!({ "aliased": "ALIASED_ONE" }));
    // A proto3 enum is open: a number it does not name is a value, and is written as a number.
    let unknown: Scalars = from_json(json!({ "color": 123 }));
    assert_eq!(unknown.color, 123);
    assert_eq!(to_json(&unknown), json!({ "color": 123 }));
    assert!(!refused_text::<Scalars>(r#"{"color": 123}"#, STRICT));
    assert!(
        refused::<Scalars>(json!({ "color": 2_147_483_648i64 })),
        "not an int32"
    );
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
    // The bits after the last whole byte need not be zero: `-_` is 0xfb and four more bits.
    let read: Scalars = from_json(json!({ "by": "-_" }));
    assert_eq!(read.by, [0xfb]);
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
fn a_null_member_of_a_oneof_is_no_member_at_all() {
    let text = Scalars {
        choice: Some(scalars::Choice::Text("t".into())),
        ..Default::default()
    };
    assert_eq!(
        from_text::<Scalars>(r#"{"text": "t", "number": null}"#),
        text
    );
    assert_eq!(
        from_text::<Scalars>(r#"{"number": null, "text": "t"}"#),
        text
    );
    assert_eq!(
        from_text::<Scalars>(r#"{"number": null, "nested": null}"#),
        Scalars::default()
    );
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
fn unknown_fields_are_skipped_by_default_and_refused_when_asked() {
    let json = json!({
        "s": "kept",
        "nope": { "any": ["json", 1, null, true] },
        "child": { "value": "v", "extra": true },
        "colors": ["COLOR_RED", "COLOR_BLUE", "COLOR_GREEN"],
        "color": "COLOR_BLUE",
        "counts": { "a": "1" },
    });
    let read: Scalars = from_json(json.clone());
    assert_eq!(
        read,
        Scalars {
            s: "kept".into(),
            child: Some(Nested { value: "v".into() }),
            // An enum value name the enum lacks is skipped as an unknown field is: the field
            // keeps its default, a list loses that element.
            colors: vec![Color::Red.into(), Color::Green.into()],
            counts: [("a".to_owned(), 1)].into(),
            ..Default::default()
        }
    );
    for strict_refuses in [
        json!({ "nope": 1 }),
        json!({ "child": { "value": "v", "extra": true } }),
        json!({ "color": "COLOR_BLUE" }),
        json!({ "colors": ["COLOR_BLUE"] }),
    ] {
        let text = strict_refuses.to_string();
        assert!(
            !refused_text::<Scalars>(&text, DecodeOptions::default()),
            "{text}"
        );
        assert!(refused_text::<Scalars>(&text, STRICT), "{text}");
    }
    let error = decode_json::<Nested>(br#"{"value": "v", "extra": true}"#, STRICT).unwrap_err();
    assert!(
        error
            .message()
            .contains("jsontest.Nested has no field \"extra\""),
        "{error:?}"
    );
    // Unknown fields of a message inside an `Any` too.
    support::pb::jsontest::register_json_types();
    let any = json!({ "any": { "@type": "type.googleapis.com/jsontest.Nested", "value": "v", "extra": 1 } });
    let read: WellKnown = from_json(any.clone());
    assert_eq!(
        to_json(&read),
        json!({ "any": { "@type": "type.googleapis.com/jsontest.Nested", "value": "v" } })
    );
    assert!(refused_text::<WellKnown>(&any.to_string(), STRICT));
    // What is not a well-formed message is refused either way.
    assert!(refused::<Scalars>(json!({ "s": 5 })), "a wrong type");
    assert!(refused::<Scalars>(json!([])), "not an object");
    assert!(refused::<Scalars>(json!(null)), "null at the top");
}

#[test]
fn a_null_value_is_kept_as_json_null() {
    let read: WellKnown = from_json(json!({ "value": null }));
    assert_eq!(
        read.value,
        Some(fastgrpc::types::Value::from(
            fastgrpc::types::value::Kind::NullValue(0)
        ))
    );
    assert_eq!(to_json(&read), json!({ "value": null }));
    // Other message fields read `null` as unset.
    let read: WellKnown = from_json(json!({ "meta": null, "list": null, "at": null }));
    assert_eq!(read, WellKnown::default());
    let nested: WellKnown = from_json(json!({ "meta": { "k": null }, "list": [null] }));
    assert_eq!(
        to_json(&nested),
        json!({ "meta": { "k": null }, "list": [null] })
    );
}

#[test]
fn timestamps_take_t_and_z_in_upper_case_only() {
    let read: WellKnown = from_json(json!({ "at": "1970-01-01T00:00:01Z" }));
    assert_eq!(read.at.unwrap().seconds, 1);
    for text in ["1970-01-01t00:00:01Z", "1970-01-01T00:00:01z"] {
        assert!(refused::<WellKnown>(json!({ "at": text })), "{text}");
    }
}

#[test]
fn an_any_without_a_type_is_the_empty_any() {
    let read: WellKnown = from_json(json!({ "any": {} }));
    assert_eq!(read.any, Some(fastgrpc::types::Any::default()));
    assert_eq!(to_json(&read), json!({ "any": {} }));
    assert!(
        refused::<WellKnown>(json!({ "any": { "value": "x" } })),
        "fields without a type"
    );
}

#[test]
fn proto2_fields_keep_presence_and_extensions_are_fields() {
    use prost::Message;
    let message = proto2::Legacy {
        count: Some(0),
        name: String::new(),
        closed: Some(proto2::Closed::One.into()),
        note: Some("n".into()),
        count_extension: Some(7),
        details: Some(proto2::legacy::Details {
            text: Some("d".into()),
        }),
        ..Default::default()
    };
    // A set optional field is written even at its default; a required one always.
    let json = json!({
        "count": 0,
        "name": "",
        "closed": "CLOSED_ONE",
        "details": { "text": "d" },
        "[jsontest.proto2.note]": "n",
        "[jsontest.proto2.count]": 7,
    });
    assert_eq!(to_json(&message), json);
    assert_eq!(from_json::<proto2::Legacy>(json), message);
    // An extension is kept in binary too, under its number.
    let encoded = message.encode_to_vec();
    assert!(
        encoded.windows(3).any(|w| w == [0xa2, 0x06, 0x01]),
        "field 100, length 1"
    );
    assert_eq!(proto2::Legacy::decode(&encoded[..]).unwrap(), message);
    // An extension is named by its full name only.
    assert!(refused_text::<proto2::Legacy>(r#"{"note": "n"}"#, STRICT));
    // A closed enum has only its declared numbers: another is as an unknown value.
    let read: proto2::Legacy = from_json(json!({ "closed": 5, "closeds": [1, 5, 0] }));
    assert_eq!((read.closed, read.closeds), (None, vec![1, 0]));
    assert!(refused_text::<proto2::Legacy>(r#"{"closed": 5}"#, STRICT));
    // A oneof of proto2, as of proto3.
    let read: proto2::Legacy = from_json(json!({ "name": "n", "first": "f", "second": null }));
    assert_eq!(read.either, Some(proto2::legacy::Either::First("f".into())));
    assert!(refused::<proto2::Legacy>(
        json!({ "first": "f", "second": "s" })
    ));
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
        aliased: Aliased::One.into(),
        flags: [(false, true)].into(),
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

    // A type nobody registered, a missing @type, or a field of the wrong type.
    assert!(refused::<WellKnown>(
        json!({ "any": { "@type": "type.googleapis.com/no.Such" } })
    ));
    assert!(refused::<WellKnown>(json!({ "any": { "s": "x" } })));
    assert!(refused::<WellKnown>(
        json!({ "any": { "@type": "type.googleapis.com/jsontest.Scalars", "s": 1 } })
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
