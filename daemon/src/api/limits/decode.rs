//! Decoding JSON and YAML with a depth and a size budget.

use super::*;

/// Decode a JSON body: at most [`MAX_DEPTH`] levels, at most [`MAX_DECODED_BYTES`] of JSON.
pub fn decode_json(body: &[u8]) -> Result<Value, DecodeError> {
    let budget = Budget::new();
    let mut deserializer = serde_json::Deserializer::from_slice(body);
    let value = Node::root(&budget).deserialize(&mut deserializer).and_then(|value| {
        deserializer.end()?;
        Ok(value)
    });
    budget.outcome(value)
}

/// Decode a YAML body (one document): [`check_yaml`] first, then as [`decode_json`].
pub fn decode_yaml(body: &[u8]) -> Result<Value, DecodeError> {
    check_yaml(body)?;
    let budget = Budget::new();
    let value = Node::root(&budget).deserialize(serde_yaml_ng::Deserializer::from_slice(body));
    budget.outcome(value)
}

/// What a decode may still spend, and why it stopped if it did.
struct Budget {
    bytes_left: Cell<usize>,
    refusal: Cell<Option<Refusal>>,
}

#[derive(Clone, Copy)]
enum Refusal {
    Deep,
    Large,
}

impl Budget {
    fn new() -> Self {
        Budget { bytes_left: Cell::new(MAX_DECODED_BYTES), refusal: Cell::new(None) }
    }

    /// Take `bytes` of decoded JSON from the budget.
    fn charge<E: serde::de::Error>(&self, bytes: usize) -> Result<(), E> {
        match self.bytes_left.get().checked_sub(bytes) {
            Some(left) => {
                self.bytes_left.set(left);
                Ok(())
            }
            None => Err(self.refuse(Refusal::Large)),
        }
    }

    fn refuse<E: serde::de::Error>(&self, refusal: Refusal) -> E {
        self.refusal.set(Some(refusal));
        E::custom("a decoding limit was reached")
    }

    /// The decoder's result, with a refusal of ours taking precedence over the error it caused.
    fn outcome<E: fmt::Display>(&self, result: Result<Value, E>) -> Result<Value, DecodeError> {
        match (self.refusal.get(), result) {
            (Some(Refusal::Deep), _) => Err(DecodeError::TooDeep),
            (Some(Refusal::Large), _) => Err(DecodeError::TooLarge),
            (None, Ok(value)) => Ok(value),
            (None, Err(error)) => Err(DecodeError::Syntax(error.to_string())),
        }
    }
}

/// A value at `depth` containers deep: builds what `serde_json::Value` builds, and charges the
/// budget for it.
#[derive(Clone, Copy)]
struct Node<'b> {
    depth: usize,
    budget: &'b Budget,
}

impl<'b> Node<'b> {
    fn root(budget: &'b Budget) -> Self {
        Node { depth: 0, budget }
    }

    /// A container's items, one level deeper.
    fn enter<E: serde::de::Error>(self) -> Result<Self, E> {
        if self.depth >= MAX_DEPTH {
            return Err(self.budget.refuse(Refusal::Deep));
        }
        Ok(Node { depth: self.depth + 1, budget: self.budget })
    }

    fn number<E: serde::de::Error>(self, number: Number) -> Result<Value, E> {
        self.budget.charge(json_len(&number))?;
        Ok(Value::Number(number))
    }
}

impl<'de> DeserializeSeed<'de> for Node<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Node<'_> {
    type Value = Value;

    fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
        formatter.write_str("any valid JSON value")
    }

    fn visit_bool<E: serde::de::Error>(self, value: bool) -> Result<Value, E> {
        self.budget.charge(5)?;
        Ok(Value::Bool(value))
    }

    fn visit_i64<E: serde::de::Error>(self, value: i64) -> Result<Value, E> {
        self.number(value.into())
    }

    fn visit_u64<E: serde::de::Error>(self, value: u64) -> Result<Value, E> {
        self.number(value.into())
    }

    fn visit_i128<E: serde::de::Error>(self, value: i128) -> Result<Value, E> {
        let number = Number::from_i128(value).ok_or_else(|| E::custom("number out of range"))?;
        self.number(number)
    }

    fn visit_u128<E: serde::de::Error>(self, value: u128) -> Result<Value, E> {
        let number = Number::from_u128(value).ok_or_else(|| E::custom("number out of range"))?;
        self.number(number)
    }

    fn visit_f64<E: serde::de::Error>(self, value: f64) -> Result<Value, E> {
        match Number::from_f64(value) {
            Some(number) => self.number(number),
            None => self.visit_unit(),
        }
    }

    fn visit_str<E: serde::de::Error>(self, value: &str) -> Result<Value, E> {
        self.budget.charge(value.len() + 2)?;
        Ok(Value::String(value.to_owned()))
    }

    fn visit_string<E: serde::de::Error>(self, value: String) -> Result<Value, E> {
        self.budget.charge(value.len() + 2)?;
        Ok(Value::String(value))
    }

    fn visit_none<E: serde::de::Error>(self) -> Result<Value, E> {
        self.visit_unit()
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        self.deserialize(deserializer)
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<Value, E> {
        self.budget.charge(4)?;
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let item = self.enter()?;
        self.budget.charge(2)?;
        let mut items = Vec::new();
        while let Some(value) = seq.next_element_seed(item)? {
            self.budget.charge(1)?;
            items.push(value);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let item = self.enter()?;
        self.budget.charge(2)?;
        let mut object = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            self.budget.charge(key.len() + 4)?;
            let value = map.next_value_seed(item)?;
            object.insert(key, value);
        }
        Ok(Value::Object(object))
    }
}
