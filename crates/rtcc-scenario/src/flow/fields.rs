//! The field names of a spec struct, read from its `Deserialize` implementation: serde hands
//! every struct's field list to `Deserializer::deserialize_struct`, so a deserializer that keeps
//! that list and stops there reads the names off the type. The flow kinds' field lists (which
//! fields a kind takes, which kind a misplaced field belongs to) come from here, so they cannot
//! drift from the structs.

use serde::de::{self, Deserialize, Visitor};
use std::fmt;

/// The names of `T`'s fields, as a scenario writes them (after serde's renames).
pub fn fields_of<'de, T: Deserialize<'de>>() -> &'static [&'static str] {
    let mut fields: &'static [&'static str] = &[];
    // The deserializer always fails, after noting the fields: the error is the expected way out.
    let _ = T::deserialize(FieldNames {
        fields: &mut fields,
    });
    fields
}

struct FieldNames<'a> {
    fields: &'a mut &'static [&'static str],
}

#[derive(Debug)]
struct Stop;

impl fmt::Display for Stop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("field names read")
    }
}

impl std::error::Error for Stop {}

impl de::Error for Stop {
    fn custom<M: fmt::Display>(_: M) -> Stop {
        Stop
    }
}

impl<'de> de::Deserializer<'de> for FieldNames<'_> {
    type Error = Stop;

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Stop> {
        Err(Stop)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        _: V,
    ) -> Result<V::Value, Stop> {
        *self.fields = fields;
        Err(Stop)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier
        ignored_any
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Two {
        first: u32,
        #[serde(rename = "second_name")]
        second: Option<String>,
    }

    #[test]
    fn a_structs_fields_are_read_off_its_deserializer() {
        assert_eq!(fields_of::<Two>(), &["first", "second_name"]);
    }
}
